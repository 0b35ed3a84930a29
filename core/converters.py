"""``<id:name>``: the path converter for row ids (registered by ``CoreConfig.ready`` before any route is resolved).

Django's ``<int:>`` takes any number of digits, and a number beyond the database's integer
range makes SQLite raise ``OverflowError`` (a 500). Ids are positive 64-bit integers: a longer
one matches no route (404), as a missing row would.
"""

from django.urls import register_converter
from django.urls.converters import IntConverter

MAX_ID = 2**63 - 1


class IdConverter(IntConverter):
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValueError(f"{value} is beyond the largest id")
        return number


register_converter(IdConverter, "id")


def id_from_text(name: str, raw: str) -> int | None:
    """An id given as text (a query parameter, a form field): empty means none; anything but a
    positive integer within ``MAX_ID`` is a ``ValueError`` naming ``name``."""
    if not raw:
        return None
    if not raw.isascii() or not raw.isdigit() or int(raw) > MAX_ID:
        raise ValueError(f"{name}: {raw!r} is not an id")
    return int(raw)
