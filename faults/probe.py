"""The Django side of ``make faults``: seeds a scenario's database and reads what happened.

    python -m faults.probe ACTION '{"json": "arguments"}'

prints one JSON object. It runs with the scenario's settings (``faults.settings``) and database.
Seeding reuses the test suite's factories and the web benchmark's seed, not copies of them.
"""

import json
import sys


def seed_reports(*, tasks: int) -> dict:
    """``tasks`` DeepSynth tasks with a two-group checklist, each with a report by sys-a and sys-b."""
    from tests.scoring.services.fakes import reports_for, systems, two_group_checklist

    pair = systems(2)
    made = []
    for _ in range(tasks):
        checklist = two_group_checklist()
        reports_for(checklist.task, pair)
        made.append(checklist.task)
    return {"tasks": [t.key for t in made], "task_ids": [t.pk for t in made], "systems": [s.name for s in pair],
            "system_ids": [s.pk for s in pair]}


def judge(*, name: str, base_url: str, batch: bool = False) -> dict:
    """An OpenAI-compatible judge on the fake endpoint; one call at a time, so jobs take a while.
    ``batch``: in batch mode (its calls go through the fake's Batch API)."""
    from scoring.models import JudgeConfig

    config = JudgeConfig.objects.create(name=name, backend="openai", base_url=base_url, model="loopback",
                                        max_concurrency=1, max_retries=2, batch=batch)
    return {"id": config.pk}


def batch_state(*, run_id: int) -> dict:
    """A batch-mode run's batches (provider ids and states) and its batch calls by status."""
    from django.db.models import Count

    from scoring.models import EvaluationRun

    run = EvaluationRun.objects.get(pk=run_id)
    return {"batches": list(run.batches.order_by("pk").values_list("batch_id", "status")),
            "calls": dict(run.batch_calls.values_list("status").annotate(n=Count("pk")).order_by()),
            "jobs": dict(run.jobs.values_list("status").annotate(n=Count("pk")).order_by()),
            "status": run.status, "error": run.error,
            "batch_errors": list(run.batches.order_by("pk").values_list("error", flat=True)),
            "call_errors": sorted(set(run.batch_calls.filter(status="failed").values_list("error", flat=True)))[:10],
            "failed_ids": sorted(run.batch_calls.filter(status="failed").values_list("custom_id", flat=True))}


def run_cancel(*, run_id: int) -> dict:
    """Cancel a run as its page's button does (its open batches are cancelled at the next poll)."""
    from scoring.models import EvaluationRun
    from scoring.services.runs import run_cancel as cancel

    return {"status": cancel(run=EvaluationRun.objects.get(pk=run_id)).status}


def curator_token() -> dict:
    from rest_framework.authtoken.models import Token

    from annotation.models import Role
    from annotation.services.accounts import account_ensure

    user, _ = account_ensure(username="faults-curator", password="faults-curator-password", role=Role.CURATOR)
    return {"token": Token.objects.get_or_create(user=user)[0].key}


def run_of(*, judge: str) -> dict:
    from scoring.models import EvaluationRun

    run = EvaluationRun.objects.filter(judge_config__name=judge).order_by("-pk").first()
    return {"id": run.pk if run else None}


def run_state(*, run_id: int) -> dict:
    """Status, job counts, verdicts and duplicate verdicts of one run's judge configuration."""
    from django.db.models import Count

    from scoring.models import EvaluationRun, Verdict

    run = EvaluationRun.objects.get(pk=run_id)
    jobs = dict(run.jobs.values_list("status").annotate(n=Count("pk")).order_by())
    verdicts = Verdict.objects.filter(judge_config=run.judge_config, report__in=run.jobs.values("report_id"))
    key = ["report", "judge_config", "prompt_version", "step", "target_kind", "target_id", "repeat"]
    duplicates = verdicts.values(*key).annotate(n=Count("pk")).filter(n__gt=1).count()
    return {"status": run.status, "error": run.error, "jobs": jobs, "jobs_unsent": run.jobs_unsent,
            "verdicts": verdicts.count(), "verdict_errors": verdicts.exclude(error="").count(),
            "duplicates": duplicates, "cards": run.score_cards.count()}


def compare(*, reference: int, other: int) -> dict:
    """Whether two runs over the same reports (different judge configurations of the same fake
    endpoint) stored the same verdicts and the same score cards."""
    from scoring.models import EvaluationRun, ScoreCard, Verdict

    def verdicts(run):
        rows = Verdict.objects.filter(judge_config=run.judge_config, report__in=run.jobs.values("report_id"))
        return sorted(rows.values_list("report_id", "step", "target_kind", "target_id", "repeat", "label", "score"))

    def cards(run):
        rows = ScoreCard.objects.filter(run=run).values_list("system_id", "report_id", "metrics", "items_judged",
                                                             "items_failed")
        return sorted((s, r or 0, json.dumps(m, sort_keys=True), j, f) for s, r, m, j, f in rows)

    a, b = EvaluationRun.objects.get(pk=reference), EvaluationRun.objects.get(pk=other)
    return {"verdicts": [len(verdicts(a)), len(verdicts(b))], "verdicts_equal": verdicts(a) == verdicts(b),
            "cards": [len(cards(a)), len(cards(b))], "cards_equal": cards(a) == cards(b)}


def seed_export(*, tasks: int) -> dict:
    """A task set of ``tasks`` checklist tasks to export."""
    from benchmark.services.tasksets import taskset_create
    from tests.factories import TaskFactory
    from tests.scoring.services.fakes import two_group_checklist

    made = [two_group_checklist(TaskFactory(key=f"faults-export-{n:04d}")).task for n in range(tasks)]
    task_set = taskset_create(name="faults export", tasks=made)
    return {"task_set": task_set.pk}


def export_state(*, job_id: int) -> dict:
    from django.conf import settings

    from annotation.models import ExportJob

    job = ExportJob.objects.get(pk=job_id)
    folder = settings.VAR_DIR / "exports"
    files = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    return {"status": job.status, "error": job.error, "size": job.size, "file": job.file_path, "files": files}


def seed_annotation(*, items: int, annotators: int) -> dict:
    """The web benchmark's verify project (each item one label short of its overlap), and a token
    per annotator for the API."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.models import AnnotationProject
    from bench.seed_web import PROJECT, SeedSpec, annotator_names, seed

    labels = seed(SeedSpec(items=items, annotators=annotators), pages=False)["labels"]
    users = get_user_model().objects.filter(username__in=annotator_names(annotators)).order_by("username")
    return {"project_id": AnnotationProject.objects.get(name=PROJECT).pk, "labels": labels,
            "tokens": [Token.objects.get_or_create(user=u)[0].key for u in users]}


def labels_check(*, project_id: int, answered: list) -> dict:
    """Of the labels answered 201 (``[label id, item id]``), how many are stored as answered;
    duplicate labels (one annotator, one item) and over-assigned items in the project."""
    from django.db.models import Count

    from annotation.models import Label
    from bench.seed_web import overassignment

    stored = dict(Label.objects.filter(pk__in=[a[0] for a in answered]).values_list("pk", "item_id"))
    kept = sum(1 for label_id, item_id in answered if stored.get(label_id) == item_id)
    duplicates = (Label.objects.filter(project_id=project_id).values("item_id", "annotator_id")
                  .annotate(n=Count("pk")).filter(n__gt=1).count())
    return {"answered": len(answered), "stored": kept, "duplicates": duplicates,
            **overassignment(project_id=project_id)}


ACTIONS = {f.__name__: f for f in (seed_reports, judge, batch_state, run_cancel, curator_token, run_of, run_state,
                                   compare,
                                   seed_export,
                                   export_state, seed_annotation, labels_check)}


def main() -> None:
    import django

    django.setup()
    action, arguments = sys.argv[1], json.loads(sys.argv[2] if len(sys.argv) > 2 else "{}")
    print(json.dumps(ACTIONS[action](**arguments), default=str))


if __name__ == "__main__":
    main()
