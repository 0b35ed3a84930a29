"""The shared annotation templates ask a project's kind what varies by kind (its templates and
sentences, ``annotation.kinds.base.AnnotationKind``) instead of comparing ``project.kind``:
``{% load kinds %}{% with kind=project|kind_of %}{% include kind.help_template %}``."""

from django import template

from ..kinds import AnnotationKind
from ..kinds import kind_of as _kind_of

register = template.Library()


@register.filter
def kind_of(project) -> AnnotationKind:
    """The kind of a project: its row, its item-context dict or the kind's name."""
    return _kind_of(project)
