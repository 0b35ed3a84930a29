"""factory_boy factories for every benchmark model."""

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from benchmark import models
from core.text import normalize_title


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


class DisciplineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Discipline
        django_get_or_create = ("taxonomy", "code")

    taxonomy = "surveylens"
    code = factory.Sequence(lambda n: f"D{n}")
    name = factory.LazyAttribute(lambda o: f"Discipline {o.code}")


class BibEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.BibEntry

    title = factory.Sequence(lambda n: f"A Study of Topic Number {n}")
    normalized_title = factory.LazyAttribute(lambda o: normalize_title(o.title))
    year = 2023


class SurveyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Survey

    title = factory.Sequence(lambda n: f"A Survey of Field {n}")
    abstract = "We survey the field."


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Task

    protocol = models.Protocol.DEEPSYNTH
    key = factory.Sequence(lambda n: f"task-{n}")
    survey = factory.SubFactory(SurveyFactory)


class TaskPromptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.TaskPrompt

    task = factory.SubFactory(TaskFactory)
    level = models.TaskPrompt.Level.GENERAL
    text = "Write a survey of the field."


class ChecklistGroupFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.ChecklistGroup

    task = factory.SubFactory(TaskFactory)
    kind = models.ChecklistGroup.Kind.GENERAL
    name = factory.Sequence(lambda n: f"Group {n}")
    position = factory.Sequence(lambda n: n)


class ChecklistItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.ChecklistItem

    group = factory.SubFactory(ChecklistGroupFactory)
    text = factory.Sequence(lambda n: f"The report should mention fact {n}.")
    position = factory.Sequence(lambda n: n)


class GoldReferenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.GoldReference

    task = factory.SubFactory(TaskFactory, protocol=models.Protocol.REPORTBENCH)
    bib_entry = factory.SubFactory(BibEntryFactory)


class NuggetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Nugget

    task = factory.SubFactory(TaskFactory, protocol=models.Protocol.DEEPSCHOLAR)
    text = factory.Sequence(lambda n: f"Nugget {n}")


class RubricCriterionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.RubricCriterion

    discipline = factory.SubFactory(DisciplineFactory)
    component = models.RubricCriterion.Component.OUTLINE
    aspect = "Coverage"
    name = factory.Sequence(lambda n: f"Criterion {n}")


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.System
        django_get_or_create = ("name", "version")

    name = factory.Sequence(lambda n: f"system-{n}")
    version = ""


class ReportFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Report

    task = factory.SubFactory(TaskFactory)
    system = factory.SubFactory(SystemFactory)
    text = "# Report\n\nSome text [1].\n\n## References\n[1] A paper."
    content_hash = factory.Sequence(lambda n: f"{n:064d}")
    submitted_at = factory.LazyFunction(timezone.now)
