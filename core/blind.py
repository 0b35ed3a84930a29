"""Blind mode as the lower apps reach it.

The rule belongs to the annotation app (a blind project's annotator must not learn what it
hides), but benchmark's report pages and scoring's verdict API must apply it too. Annotation
registers one restriction per kind of row (``blind_register``); the lower apps call
``blind_restrict``. A kind nobody registered is refused rather than shown: blind fails closed.
"""

from collections.abc import Callable

from django.db.models import QuerySet

_RESTRICTIONS: dict[str, Callable[..., QuerySet]] = {}


def blind_register(kind: str, restrict: Callable[..., QuerySet]) -> None:
    """``restrict(queryset, user)`` returns the rows of ``queryset`` that ``user`` may see."""
    _RESTRICTIONS[kind] = restrict


def blind_restrict(kind: str, queryset: QuerySet, user) -> QuerySet:
    try:
        restrict = _RESTRICTIONS[kind]
    except KeyError:
        raise RuntimeError(f"no blind-mode rule registered for {kind!r}; is the annotation app installed?") from None
    return restrict(queryset, user)
