"""Every registered kind implements every part of the interface, and every project kind has one."""

import inspect

import pytest
from django.utils.module_loading import import_string

from annotation.forms import LabelForm
from annotation.kinds import KINDS, kind_of
from annotation.kinds.base import ATTRIBUTES, METHODS, AnnotationKind
from annotation.models import AnnotationProject, TargetKind
from django.template.loader import get_template


def test_every_project_kind_is_registered():
    assert set(KINDS) == set(AnnotationProject.Kind.values)


@pytest.mark.parametrize("name", sorted(AnnotationProject.Kind.values))
def test_kind_implements_every_part(name):
    kind = KINDS[name]
    assert isinstance(kind, AnnotationKind) and kind.name == name and kind_of(name) is kind
    assert not inspect.isabstract(type(kind))
    for attribute in ATTRIBUTES:
        assert hasattr(kind, attribute), f"{name}: {attribute}"
    for method in METHODS:
        assert callable(getattr(kind, method)), f"{name}: {method}"
    assert set(kind.target_kinds) <= set(TargetKind.values)
    assert kind.key_fields and set(kind.key_fields) <= set(kind.value_fields)
    assert set(kind.blind_fields) <= set(kind.value_fields)
    assert set(kind.export_columns) <= set(kind.value_fields)
    assert kind.min_overlap <= kind.default_overlap
    assert kind.default_reveal in AnnotationProject.Reveal.values
    assert "{position}" in kind.undo_refused and "{when}" in kind.undo_refused  # the reveal policy (#37)
    assert kind.undo_refused.format(position=3, when="committing it showed you")
    for template in (kind.item_template, kind.adjudication_template, kind.help_template):
        get_template(template)  # its folder under templates/annotation/kinds/
    assert issubclass(import_string(kind.label_form), LabelForm)
    assert callable(import_string(kind.panel_view))
    assert set(kind.blind_attacks) <= {"schedule", "style", "verdict", "timing"}  # annotation.blind_audit's
    AnnotationProject._meta.get_field(kind.design_field)
    for sentence in (kind.blind_hides, kind.hidden_until_close, kind.adjudicated_when):
        assert sentence and sentence == sentence.strip()


def test_an_unknown_kind_is_a_value_error_naming_the_field():
    with pytest.raises(ValueError, match="^kind: 'survey'"):
        kind_of("survey")
