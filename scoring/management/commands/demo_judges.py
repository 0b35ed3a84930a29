"""The demo's judge configuration (the offline heuristic judge) and its demo run.

The demo run evaluates the DeepSynth-Eval demo set (4 reports: the release's example report on
each of its 4 tasks) with the offline judge: about 25 s of one core's time, so the worker that
``make run`` starts finishes it within half a minute and the run page, the leaderboard and the
charts have numbers at once. The DeepScholar demo set's 8 reports take minutes instead
(the offline judge embeds every cited document and nugget with MiniLM on the CPU): start that run
from the runs page when you want it; a second run of the same judge reuses every verdict.
"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand

from benchmark.models import Report, TaskSet
from core.broker import BrokerUnavailable
from scoring.models import EvaluationRun, JudgeConfig
from scoring.services.runs import run_create, run_start

DEMO_RUN = "demo: DeepSynth-Eval with the offline judge"
DEMO_SET = "demo-deepsynth"


class Command(BaseCommand):
    help = ("Create the demo's judge configuration, the offline heuristic judge, and queue the demo run "
            "(DeepSynth-Eval, 4 reports, under 30 s on the worker); both once (idempotent).")

    def add_arguments(self, parser):
        parser.add_argument("--no-run", action="store_true", help="only the judge configuration, no demo run")

    def handle(self, *args, no_run: bool = False, **options):
        config, created = JudgeConfig.objects.get_or_create(
            name="offline-heuristic",
            defaults={"backend": JudgeConfig.Backend.OFFLINE, "prompt_version": "v1", "max_concurrency": 2},
        )
        self.stdout.write(f"judge configuration {config} ({'created' if created else 'exists'})")
        if no_run:
            return
        if EvaluationRun.objects.filter(name=DEMO_RUN).exists():
            self.stdout.write(f"demo run “{DEMO_RUN}” (exists)")
            return
        task_set = TaskSet.objects.filter(name=DEMO_SET).order_by("-version").first()
        if task_set is None:
            self.stdout.write(f"no demo run: task set {DEMO_SET} is missing (manage.py load_demo makes it)")
            return
        systems = {report.system for report in Report.objects.filter(task__in=task_set.tasks.all())
                   .select_related("system")}
        try:
            run = run_create(protocol="deepsynth", judge_config=config, systems=sorted(systems, key=str),
                             task_set=task_set, name=DEMO_RUN)
        except ValidationError as exc:
            self.stdout.write(f"no demo run: {'; '.join(exc.messages)}")
            return
        try:
            run_start(run=run)
        except BrokerUnavailable:
            self.stdout.write(f"demo run #{run.pk} queued; the broker did not answer, the worker sends its jobs "
                              "when it starts")
            return
        self.stdout.write(f"demo run #{run.pk} “{DEMO_RUN}”: {run.jobs.count()} reports queued for the worker "
                          f"(/runs/{run.pk}/)")
