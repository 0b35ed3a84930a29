"""How annotation's rules reach the lower apps, which never import annotation: the blind-mode
restrictions benchmark's report pages and scoring's verdict API apply (``core.blind``), and the
webhooks a finished run fires (``scoring.signals.run_finished``), and the export jobs recovery
re-queues (``core.jobs``), and the SurveyLens label importer (``benchmark.importers.catalogue``). Connected by ``AnnotationConfig``.
Within the app: adaptive pairwise projects choose their next pairs once preferences of theirs
committed (``preferences_recorded`` → ``transaction.on_commit`` → ``adaptive_pairs_refill``)."""

from django.db import transaction

from benchmark.importers.catalogue import Importer, importer_register
from core.blind import blind_register
from core.jobs import JobKind, job_kind_register
from scoring.models import EvaluationRun
from scoring.signals import run_finished

from .blind import hidden_reports, visible_verdicts
from .models import AnnotationProject, ExportJob, PairwisePreference
from .services.adaptive_pairs import adaptive_pairs_refill
from .services.agreement import agreement_statistics_refresh_due
from .services.webhooks import webhooks_fire_run_finished
from .signals import preferences_recorded
from .tasks import run_export


def _fire_webhooks(sender, *, run, **kwargs) -> None:
    webhooks_fire_run_finished(run=run)


def _adaptive_pairs_after_commit(sender, *, preferences, **kwargs) -> None:
    # After the commit: the fit reads committed labels only, and a failure here (logged) never
    # undoes or fails the label that triggered it; the project keeps the items it had ahead. A
    # row that carries its project (the workspace's do) says whether it is adaptive: a
    # round-robin project's label costs nothing more.
    field = PairwisePreference._meta.get_field("project")
    ids = {row.project_id for row in preferences if row.project_id is not None and not (
        field.is_cached(row) and row.project.pair_choice != AnnotationProject.PairChoice.ADAPTIVE)}
    if ids:
        transaction.on_commit(lambda: adaptive_pairs_refill(project_ids=ids), robust=True)


def _restrict_reports(queryset, user):
    return queryset.exclude(pk__in=hidden_reports(user).values("pk"))


def _restrict_verdicts(queryset, user):
    return queryset.filter(pk__in=visible_verdicts(user=user).values("pk"))


def connect() -> None:
    run_finished.connect(_fire_webhooks, sender=EvaluationRun, dispatch_uid="annotation.webhooks.run_finished")
    preferences_recorded.connect(_adaptive_pairs_after_commit, sender=PairwisePreference,
                                 dispatch_uid="annotation.adaptive_pairs.refill")
    blind_register("report", _restrict_reports)
    blind_register("verdict", _restrict_verdicts)
    importer_register(Importer(
        "surveylens-annotations", "annotation.importers.surveylens_annotations:import_surveylens_annotations",
        "SurveyLens human pairwise label files (outline object, content and reference lists) or a folder"))
    # Each recovery also asks for the agreement figures of large projects whose labels changed.
    job_kind_register(JobKind(ExportJob, run_export, recovered=agreement_statistics_refresh_due))
