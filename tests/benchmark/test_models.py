"""Every CheckConstraint and UniqueConstraint of the benchmark models rejects a bad row in the database."""

import pytest
from django.apps import apps
from django.db import IntegrityError, transaction

from benchmark import models
from tests import factories

pytestmark = pytest.mark.django_db


def _constraint_question_on_general_group():
    task = factories.TaskFactory()
    question = models.ConstraintQuestion.objects.create(task=task, text="Q?")
    factories.ChecklistGroupFactory(task=task, kind="general", constraint_question=question)


def _report_twice():
    report = factories.ReportFactory()
    factories.ReportFactory(task=report.task, system=report.system)


def _citation_twice():
    citation = models.SurveyCitation.objects.create(
        survey=factories.SurveyFactory(), bib_entry=factories.BibEntryFactory(), position=0
    )
    models.SurveyCitation.objects.create(survey=citation.survey, bib_entry=citation.bib_entry, position=1)


def _gold_twice():
    gold = factories.GoldReferenceFactory()
    factories.GoldReferenceFactory(task=gold.task, bib_entry=gold.bib_entry)


def _prompt_level_twice():
    prompt = factories.TaskPromptFactory(level="general")
    factories.TaskPromptFactory(task=prompt.task, level="general")


# constraint name → what violates it (the setup rows are valid; the last write is not)
VIOLATIONS = {
    "discipline_unique_code": lambda: [models.Discipline.objects.create(taxonomy="t", code="c", name=n) for n in "ab"],
    "bibentry_unique_doi": lambda: [factories.BibEntryFactory(doi="10.1/x") for _ in range(2)],
    "bibentry_unique_arxiv": lambda: [factories.BibEntryFactory(arxiv_id="2301.00001") for _ in range(2)],
    "bibentry_has_title": lambda: factories.BibEntryFactory(normalized_title=""),
    "survey_unique_external_id": lambda: [factories.SurveyFactory(source="s", external_id="e") for _ in range(2)],
    "surveycitation_unique": _citation_twice,
    "task_unique_key": lambda: [factories.TaskFactory(protocol="deepsynth", key="k") for _ in range(2)],
    "taskprompt_unique_level": _prompt_level_twice,
    "group_threshold_positive": lambda: factories.ChecklistGroupFactory(threshold=0),
    "group_clip_factor_positive": lambda: factories.ChecklistGroupFactory(clip_factor=-0.5),
    "group_weight_nonnegative": lambda: factories.ChecklistGroupFactory(weight=-1),
    "group_question_only_for_constraint": _constraint_question_on_general_group,
    "goldreference_unique": _gold_twice,
    "goldreference_quartile_range": lambda: factories.GoldReferenceFactory(citation_quartile=5),
    "criterion_weight_nonnegative": lambda: factories.RubricCriterionFactory(weight=-0.1),
    "criterion_has_scope": lambda: factories.RubricCriterionFactory(discipline=None, task=None),
    "system_unique_name_version": lambda: [models.System.objects.create(name="s", version="1") for _ in range(2)],
    "report_unique_task_system": _report_twice,
    "taskset_unique_version": lambda: [models.TaskSet.objects.create(name="set", version=1) for _ in range(2)],
}

# Rows at the edge of each rule, which the database must accept.
ACCEPTED = {
    "empty DOIs and arXiv ids repeat": lambda: [factories.BibEntryFactory(doi="", arxiv_id="") for _ in range(2)],
    "empty external ids repeat": lambda: [factories.SurveyFactory(source="s", external_id="") for _ in range(2)],
    "same key in two protocols": lambda: [factories.TaskFactory(protocol=p, key="k") for p in ("deepsynth", "surveylens")],
    "unset threshold and clip factor, zero weight": lambda: factories.ChecklistGroupFactory(
        threshold=None, clip_factor=None, weight=0
    ),
    "quartiles 1 and 4": lambda: [factories.GoldReferenceFactory(citation_quartile=q) for q in (1, 4, None)],
    "constraint group with its question": lambda: factories.ChecklistGroupFactory(
        kind="constraint", constraint_question=models.ConstraintQuestion.objects.create(
            task=factories.TaskFactory(), text="Q?"
        )
    ),
    "task-scoped criterion": lambda: factories.RubricCriterionFactory(discipline=None, task=factories.TaskFactory()),
    "a second version of a set": lambda: [models.TaskSet.objects.create(name="set", version=v) for v in (1, 2)],
}


def test_every_constraint_has_a_violation_case():
    names = {c.name for model in apps.get_app_config("benchmark").get_models() for c in model._meta.constraints}
    assert names == set(VIOLATIONS)


@pytest.mark.parametrize("name", sorted(VIOLATIONS))
def test_constraint_rejects_a_bad_row(name):
    with pytest.raises(IntegrityError, match=name), transaction.atomic():
        VIOLATIONS[name]()


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_rows_at_the_edge_are_accepted(case):
    with transaction.atomic():
        made = ACCEPTED[case]()
    rows = made if isinstance(made, list) else [made]
    assert all(type(row).objects.filter(pk=row.pk).exists() for row in rows)
