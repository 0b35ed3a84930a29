"""Learn SurveyLens rubric aspect weights from pairwise preferences (see annotation.services.rubric_weights)."""

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Discipline
from scoring.metrics import BT_WEIGHT_VARIANTS
from scoring.models import EvaluationRun
from annotation.services.rubric_weights import WeightFitError, rubric_weights_fit
from scoring.pipelines.surveys.surveylens import COMPONENTS


class Command(BaseCommand):
    help = ("Fit preference-aligned (Bradley–Terry) aspect weights for a discipline's rubric from a finished "
            "SurveyLens run's aspect scores and stored pairwise preferences; --apply stores them on the criteria.")

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, required=True, help="a finished surveylens run's id")
        parser.add_argument("--discipline", required=True, help="discipline code (or taxonomy:code)")
        parser.add_argument("--component", choices=COMPONENTS, action="append",
                            help="component(s) to fit; default: all three")
        parser.add_argument("--source", default="", help="only preferences with this source (e.g. an import name)")
        parser.add_argument("--alpha", type=float, default=0.1, help="L2 regularisation α of eq. 3 (default 0.1)")
        parser.add_argument("--variant", choices=BT_WEIGHT_VARIANTS, default="paper",
                            help="paper: eq. 3 on scores normalised to x/5 (default); upstream: the released bt.py, "
                                 "on raw 1–5 scores")
        parser.add_argument("--apply", action="store_true", help="store the weights (default: only print them)")

    def handle(self, *args, run, discipline, component, source, alpha, apply, variant="paper", **options):
        chosen_run = EvaluationRun.objects.filter(pk=run).first()
        if chosen_run is None:
            raise CommandError(f"no evaluation run #{run}")
        taxonomy, _, code = discipline.rpartition(":")
        matches = Discipline.objects.filter(code=code, **({"taxonomy": taxonomy} if taxonomy else {}))
        if matches.count() != 1:
            known = ", ".join(f"{d.taxonomy}:{d.code}" for d in Discipline.objects.all()[:30]) or "none"
            raise CommandError(f"discipline {discipline!r} matches {matches.count()} disciplines (known: {known})")
        chosen = matches.get()
        for name in component or COMPONENTS:
            try:
                fit = rubric_weights_fit(run=chosen_run, component=name, discipline_id=chosen.pk,
                                         preference_source=source, alpha=alpha, apply=apply, variant=variant)
            except WeightFitError as error:
                self.stdout.write(self.style.WARNING(f"{name}: {error}"))
                continue
            skipped = ", ".join(f"{n} {why}" for why, n in fit.skipped.items()) or "none"
            self.stdout.write(f"{name}: {fit.pairs_used} preference(s) used (skipped: {skipped}); "
                              f"concordance {fit.concordance_before:.3f} → {fit.concordance_after:.3f}")
            for aspect in fit.aspects:
                self.stdout.write(f"  {fit.weights[aspect]:.4f}  {aspect}")
            if apply:
                self.stdout.write(f"  {fit.criteria_updated} criteria updated")
        if apply:
            self.stdout.write(f"Re-score the run to use the new weights: manage.py rescore --run {run}")
