"""Recompute a run's score cards from its stored verdicts, without any judge call."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from scoring.models import EvaluationRun
from scoring.services.run_finish import run_rescore

from .evaluate import print_score_cards


class Command(BaseCommand):
    help = "Recompute the score cards of a run from stored verdicts (no judge calls)."

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, required=True, dest="run_id", help="the run's id")

    def handle(self, *args, run_id: int, **options):
        run = EvaluationRun.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"no run #{run_id}")
        try:
            cards = run_rescore(run=run)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        except ValueError as exc:  # the metrics refuse the stored data, e.g. a clip factor above 1
            raise CommandError(f"cannot score run #{run.pk}: {exc}") from None
        self.stdout.write(f"run #{run.pk}: {len(cards)} score card(s) recomputed from stored verdicts")
        print_score_cards(self, run)
