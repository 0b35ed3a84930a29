"""Tasks that use every part of the native format, and helpers to compare database states."""

import zlib

from django.apps import apps
from django.contrib.auth import get_user_model

from benchmark import models
from core.audit_actions import AuditAction
from core.models import AuditLog
from core.text import normalize_title
from benchmark.services.history import proposable_update
from tests import factories


def row_counts() -> dict[str, int]:
    """Rows of every benchmark model (and of the audit trail and users), to show that a failed import
    changed nothing."""
    counts = {m.__name__: m.objects.count() for m in apps.get_app_config("benchmark").get_models()}
    counts["AuditLog"] = AuditLog.objects.count()
    counts["User"] = get_user_model().objects.count()
    return counts


def wipe_benchmark() -> None:
    """Delete every benchmark row, leaving an empty benchmark database (users and the system
    alias table, which the migrations seed, stay)."""
    AuditLog.objects.all().delete()
    models.TaskSet.objects.all().delete()
    models.Report.objects.all().delete()
    models.System.objects.all().delete()
    models.Task.objects.all().delete()
    models.Survey.objects.all().delete()
    models.BibEntry.objects.all().delete()
    models.RubricCriterion.objects.all().delete()
    models.Discipline.objects.all().delete()
    assert not any(n for name, n in row_counts().items() if name not in ("User", "SystemAlias"))


def bib(title: str, **fields) -> models.BibEntry:
    # As bib_entries_upsert stores it (the factory's title.lower() would not match on import).
    return factories.BibEntryFactory(title=title, normalized_title=normalize_title(title), **fields)


def discipline_with_criteria(code: str = "BIO") -> models.Discipline:
    discipline = factories.DisciplineFactory(code=code, name="Biologie & Santé")
    # Created out of order: the format lists them by position, then id.
    factories.RubricCriterionFactory(discipline=discipline, position=2, name="Référencement", weight=0.5,
                                     component=models.RubricCriterion.Component.REFERENCE)
    factories.RubricCriterionFactory(discipline=discipline, position=1, name="Structure", aspect="Logic",
                                     description="Sections build on each other.", origin="llm", proposed_by="gpt-4.1")
    return discipline


def rich_task(key: str = "rich-1", *, discipline=None, survey=None, status=models.Task.Status.CURATED) -> models.Task:
    """A task with every kind of item, non-ASCII text, JSON fields and odd positions."""
    discipline = discipline or discipline_with_criteria()
    survey = survey or factories.SurveyFactory(
        title="Luciferase systems — in‑vivo imaging: a “survey”",
        abstract="Line one\nline two with $\\alpha$ and emoji 🧪",
        authors="Ana Ñúñez and Zoë Ölund",
        year=2024,
        publication_date="2024-03-05",
        arxiv_id=f"2403.{zlib.crc32(key.encode()) % 90000 + 10000}",
        url="https://arxiv.org/abs/2403.01234",
        categories="q-bio.QM",
        discipline=discipline,
        outline=[[1, "Introduction"], [2, "Firefly luciferase"]],
        content=[{"heading": "Introduction", "level": 1, "text": "Bioluminescence…", "stats": {"words": 3}}],
        references=[{"number": 1, "text": "[1] A. Author. Paper.", "title": "Paper"}],
        stats={"sections": 2, "ratio": 0.25},
        source="test-set",
        external_id=f"survey-{key}",
        extra={"nested": {"b": [1, 2.5, None, True], "a": "x"}},
    )
    cited = [bib(f"Cited work {key} {i}", year=2000 + i, doi=f"10.1000/{key}.{i}") for i in range(3)]
    for position, entry in zip((5, 1, 3), cited):
        models.SurveyCitation.objects.create(survey=survey, bib_entry=entry, position=position, key=f"ref{position}")

    task = factories.TaskFactory(
        key=key, survey=survey, title=f"Task {key}: “quoted”", status=status, cutoff_date="2024-01-31",
        excluded_titles=["Luciferase systems — in‑vivo imaging: a “survey”"], source="test-set",
        extra={"general_prompt": "Write…", "n": 3},
    )
    factories.TaskPromptFactory(task=task, level=models.TaskPrompt.Level.SENTENCE, text="One sentence ≤ 30 words.")
    factories.TaskPromptFactory(task=task, level=models.TaskPrompt.Level.GENERAL, text="Write a survey.",
                                origin="llm", proposed_by="gpt-4.1", prompt_version="p-2", review_status="accepted")
    q_late = models.ConstraintQuestion.objects.create(task=task, position=7, title="Second", text="What of §2?")
    q_early = models.ConstraintQuestion.objects.create(task=task, position=2, title="First", text="What of §1?")
    general = factories.ChecklistGroupFactory(task=task, name="Coverage", position=10, clip_factor=1.0, weight=2.0)
    strict_a = factories.ChecklistGroupFactory(
        task=task, name="Constraint A", position=20, kind="constraint", anchor="structure",
        constraint_question=q_late, clip_factor=0.8, threshold=1.5,
    )
    strict_b = factories.ChecklistGroupFactory(
        task=task, name="Constraint B", position=15, kind="constraint", constraint_question=q_early, weight=0.0,
    )
    for group, n in ((general, 3), (strict_a, 2), (strict_b, 1)):
        for i in range(n):
            factories.ChecklistItemFactory(group=group, position=n - i, subgroup=f"sub {i % 2}",
                                           text=f"{group.name}: fact {i} — «détail»", reward=[1.0, -1.0, 0.25][i % 3])
    gold_entries = [bib(f"Gold paper {key} 0", authors="X. Y."),
                    bib(f"Gold paper {key} 1", arxiv_id=f"2101.{zlib.crc32(key.encode()) % 90000 + 10000}")]
    models.GoldReference.objects.create(task=task, bib_entry=gold_entries[0], important=True, citation_quartile=1,
                                        position=3)
    models.GoldReference.objects.create(task=task, bib_entry=gold_entries[1], position=1, review_status="rejected")
    factories.NuggetFactory(task=task, text="Vital nugget ✓", importance="vital", position=1)
    factories.NuggetFactory(task=task, text="Okay nugget", position=0)
    factories.RubricCriterionFactory(task=task, discipline=None, component="content", name="Depth", position=0,
                                     scale_max=10)
    factories.RubricCriterionFactory(task=task, discipline=discipline, component="outline", name="Balance",
                                     position=1)
    return task


def edit_history(task: models.Task) -> None:
    """Revisions by a user and by a label, as the review workflow writes them."""
    expert = factories.UserFactory(username="expert-ana")
    item = models.ChecklistItem.objects.filter(group__task=task).order_by("position", "id").first()
    item = proposable_update(obj=item, changes={"text": item.text + " (edited)"}, expected_version=item.version,
                             actor=expert, note="clarified")
    proposable_update(obj=item, changes={"review_status": "accepted"}, expected_version=item.version,
                      actor_label="bulk-accept", action=AuditAction.REVIEW_ACCEPTED)
    nugget = task.nuggets.order_by("position", "id").first()
    proposable_update(obj=nugget, changes={"importance": "vital"}, expected_version=nugget.version, actor=expert)
    criterion = models.RubricCriterion.objects.filter(task__isnull=True, discipline=task.survey.discipline).first()
    proposable_update(obj=criterion, changes={"weight": 3.0}, expected_version=criterion.version, actor=expert)
