"""``{{ text|source_text }}``: text from a paper's source as the paper shows it (``benchmark.rendering``)."""

from django import template

from ..rendering import source_text as _source_text

register = template.Library()


@register.filter
def source_text(text) -> str:
    return _source_text(str(text) if text is not None else "")
