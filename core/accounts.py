"""Who a user is globally: curator, annotator or viewer (``AnnotatorProfile.role``)."""

from .models import AnnotatorProfile, Role


def global_role(user) -> str | None:
    """The user's ``AnnotatorProfile.role``, None without a profile. Authentication loads the
    profile with the user (``core.authentication``); otherwise the first call reads it, and the
    user object keeps it for the rest of the request."""
    if not getattr(user, "is_authenticated", False):
        return None
    try:
        return user.profile.role
    except AnnotatorProfile.DoesNotExist:
        return None


def is_global_curator(user) -> bool:
    """Superusers and users whose ``AnnotatorProfile.role`` is curator."""
    return getattr(user, "is_authenticated", False) and (user.is_superuser or global_role(user) == Role.CURATOR)


def is_viewer(user) -> bool:
    return global_role(user) == Role.VIEWER
