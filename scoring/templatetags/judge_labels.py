"""Judge words for people: ``{{ verdict.step|step_label }}``."""

from django import template

from ..judges.steps import step_label as _step_label

register = template.Library()


@register.filter
def step_label(name: str) -> str:
    return _step_label(name)
