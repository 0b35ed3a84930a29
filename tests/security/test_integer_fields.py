"""No 500 from a number: every integer field of every form and input serializer of the project,
found by walking its modules, refuses 10^25, -1 and "x" with a validation error and, for a
field that picks rows, without sending the value to the database (``core.bounded``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from django import forms
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework import serializers

pytestmark = pytest.mark.django_db

PACKAGES = ("core", "benchmark", "scoring", "annotation", "config")
BAD_VALUES = (10**25, str(10**25), -1, "-1", "x", "1e400", "٣", "𝟓", "²", "1_0")


def _modules():
    for package in PACKAGES:
        root = importlib.import_module(package)
        yield root
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if ".migrations" in info.name or info.name.endswith(("wsgi", "asgi", "settings_test")):
                continue
            yield importlib.import_module(info.name)


def _classes(namespace, seen):
    for value in vars(namespace).values():
        if inspect.isclass(value) and value not in seen and value.__module__.split(".")[0] in PACKAGES:
            seen.add(value)
            yield value
            yield from _classes(value, seen)  # nested InputSerializer / Record classes


def _project_classes():
    seen: set = set()
    for module in _modules():
        yield from _classes(module, seen)


def _is_input_serializer(cls) -> bool:
    """Serializers that read what clients send (the API's ``InputSerializer`` convention and the
    nested ones they use); output-only serializers never validate input."""
    return issubclass(cls, serializers.BaseSerializer) and "Output" not in cls.__qualname__ and (
        "Input" in cls.__qualname__ or any("Input" in outer for outer in cls.__qualname__.split(".")[:-1]))


def _form_fields():
    for cls in _project_classes():
        if issubclass(cls, forms.BaseForm):
            for name, field in cls.base_fields.items():
                yield f"{cls.__module__}.{cls.__qualname__}.{name}", field


def _serializer_fields(serializer, path):
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        where = f"{path}.{name}"
        if isinstance(field, serializers.BaseSerializer) and hasattr(field, "fields"):
            yield from _serializer_fields(field, where)
        elif isinstance(field, serializers.ListSerializer):
            yield from _serializer_fields(field.child, where)
        elif isinstance(field, serializers.ListField) and field.child is not None:
            yield where + "[]", field.child
            if isinstance(field.child, serializers.BaseSerializer):
                yield from _serializer_fields(field.child, where + "[]")
        elif isinstance(field, serializers.ManyRelatedField):
            yield where + "[]", field.child_relation
        else:
            yield where, field


def _all_serializer_fields():
    for cls in _project_classes():
        if _is_input_serializer(cls):
            yield from _serializer_fields(cls(), f"{cls.__module__}.{cls.__qualname__}")


def _is_integer_form_field(field) -> bool:
    if isinstance(field, (forms.FloatField, forms.DecimalField)):
        return False
    if isinstance(field, forms.ModelChoiceField):
        pk = field.queryset.model._meta.pk if field.to_field_name is None else \
            field.queryset.model._meta.get_field(field.to_field_name)
        return pk.get_internal_type() in ("AutoField", "BigAutoField", "IntegerField", "BigIntegerField")
    return isinstance(field, forms.IntegerField)


def _is_integer_serializer_field(field) -> bool:
    if isinstance(field, serializers.PrimaryKeyRelatedField):
        return field.get_queryset().model._meta.pk.get_internal_type() in ("AutoField", "BigAutoField")
    return isinstance(field, serializers.IntegerField)


FORM_FIELDS = sorted((name, field) for name, field in _form_fields() if _is_integer_form_field(field))
SERIALIZER_FIELDS = sorted(
    ((name, field) for name, field in _all_serializer_fields() if _is_integer_serializer_field(field)),
    key=lambda pair: pair[0])


def test_the_walk_finds_the_fields_of_issue_27():
    names = {name for name, _ in FORM_FIELDS} | {name for name, _ in SERIALIZER_FIELDS}
    for expected in ("annotation.project_forms.ProjectCreateForm.overlap",
                     "annotation.project_forms.ProjectCreateForm.tasks",
                     "annotation.project_forms.ProjectEditForm.hold_minutes",
                     "scoring.forms.RunCreateForm.systems", "benchmark.forms.TaskSetCreateForm.tasks",
                     "annotation.api.views.ProjectListApi.InputSerializer.seed",
                     "annotation.api.views.ProjectListApi.InputSerializer.overlap",
                     "annotation.api.views.ProjectDetailApi.InputSerializer.hold_seconds",
                     "annotation.api.labels.LabelInputSerializer.item",
                     "annotation.api.labels.LabelListApi.InputSerializer.item",
                     "scoring.api.views.JudgeConfigListApi.InputSerializer.repeats",
                     "scoring.forms.JudgeConfigForm.max_retries"):
        assert any(name.startswith(expected) for name in names), (expected, sorted(names))


@pytest.mark.parametrize(("name", "field"), FORM_FIELDS, ids=[name for name, _ in FORM_FIELDS])
def test_every_integer_form_field_refuses_huge_negative_and_text(name, field):
    field = field.__deepcopy__({})
    if isinstance(field, forms.ModelChoiceField):  # the page's real choices: a refusal must not query them
        field.queryset = field.queryset.model._default_manager.all()
    for value in BAD_VALUES:
        data = [value] if isinstance(field, forms.ModelMultipleChoiceField) else value
        with CaptureQueriesContext(connection) as queries, pytest.raises(ValidationError):
            field.clean(data)
        assert not queries.captured_queries or not isinstance(field, forms.ModelChoiceField), (name, value)


@pytest.mark.parametrize(("name", "field"), SERIALIZER_FIELDS, ids=[name for name, _ in SERIALIZER_FIELDS])
def test_every_integer_serializer_field_refuses_huge_negative_and_text(name, field):
    for value in BAD_VALUES:
        with CaptureQueriesContext(connection) as queries, pytest.raises(serializers.ValidationError):
            field.run_validation(value)
        assert not queries.captured_queries, (name, value)


def _built_from_models():
    """Forms whose fields are built from models when they are made (not class attributes): the
    workspace's edit form of each proposable kind and its add form of each kind."""
    from annotation.forms import ProposableAddForm, VerifyEditForm
    from annotation.models import VERIFY_TARGETS
    from annotation.services.additions import ADDABLE_KINDS
    from tests.factories import TaskFactory

    task = TaskFactory()
    for kind in VERIFY_TARGETS:
        yield f"VerifyEditForm[{kind}]", VerifyEditForm(target_kind=kind, current={})
    for kind in ADDABLE_KINDS:
        yield f"ProposableAddForm[{kind}]", ProposableAddForm(kinds=[kind], task=task, kind=kind)


def test_integer_fields_of_forms_built_from_models_are_bounded_too():
    walked = 0
    for form_name, form in _built_from_models():
        for name, field in form.fields.items():
            if not _is_integer_form_field(field):
                continue
            walked += 1
            if isinstance(field, forms.ModelChoiceField):
                field.queryset = field.queryset.model._default_manager.all()
            for value in BAD_VALUES:
                data = [value] if isinstance(field, forms.ModelMultipleChoiceField) else value
                with CaptureQueriesContext(connection) as queries, pytest.raises(ValidationError):
                    field.clean(data)
                assert not queries.captured_queries, (form_name, name, value)
    assert walked >= 3  # weights, years, citation counts, the checklist group
