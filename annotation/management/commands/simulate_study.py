import json

from django.core.management.base import BaseCommand

from annotation.simulation.calibration import calibration_simulation
from annotation.simulation.pairwise import pairwise_simulation

# (name, function(seed) -> dict, the table's rows: (heading, key)). One line per study.
SECTIONS = [
    ("pairwise", pairwise_simulation, [("labels to τ ≥ 0.9, round-robin", "labels_round_robin"),
                                       ("  its standard error", "se_round_robin"),
                                       ("labels to τ ≥ 0.9, adaptive", "labels_adaptive"),
                                       ("  its standard error", "se_adaptive"),
                                       ("adaptive / round-robin", "ratio"),
                                       ("τ ≥ 0.9 after all 200, round-robin", "reached_at_end_round_robin"),
                                       ("τ ≥ 0.9 after all 200, adaptive", "reached_at_end_adaptive"),
                                       ("replications", "replications")]),
    ("ppi", calibration_simulation, [("PPI coverage at nominal 95 % (worst noise model)", "coverage"),
                                     ("PPI width / human-only width (worst)", "width_ratio"),
                                     ("expert labels per simulation", "n_human"),
                                     ("judge verdicts", "n_judge"),
                                     ("simulations", "simulations")]),
]


def _shown(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


class Command(BaseCommand):
    help = ("Replay the studies on the shipped real data (docs/statistics.md): pairwise, the labels round-robin and"
            " adaptive pair choice need to reach Kendall τ ≥ 0.9 with the full-data ranking of the SurveyLens human"
            " preferences. Prints one table; --json prints one object, a key per study.")

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")

    def handle(self, *args, seed: int, json: bool, **options):
        results = {name: function(seed) for name, function, _ in SECTIONS}
        if json:
            self.stdout.write(_dumps(results))
            return
        rows = [(name, heading, _shown(results[name][key])) for name, _, shown in SECTIONS for heading, key in shown]
        widths = [max(len(row[n]) for row in [("study", "measure", "value"), *rows]) for n in range(3)]
        line = "| " + " | ".join(f"{{:{w}}}" for w in widths) + " |"
        self.stdout.write(line.format("study", "measure", "value"))
        self.stdout.write("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for row in rows:
            self.stdout.write(line.format(*row))
        self.stdout.write(f"seed {seed}")


def _dumps(results: dict) -> str:
    return json.dumps(results, indent=2, ensure_ascii=False)
