import json

from django.core.management.base import BaseCommand

from annotation.simulation.bradley_terry import REPLICATIONS, pairwise_bt_simulation
from annotation.simulation.cluster import cluster_simulation
from annotation.simulation.calibration import calibration_simulation, ppi_judges_simulation
from annotation.simulation.pairwise import pairwise_simulation
from annotation.simulation.unit_calibration import unit_calibration_simulation


def _keyed(shown):
    return lambda result: [(heading, result[key]) for heading, key in shown]


def _pairwise_bt_rows(result: dict) -> list[tuple[str, object]]:
    rows = []
    for name, setting in result.items():
        rows += [(f"{name}: labels until τ ≥ 0.9 settled, round-robin", setting["labels_round_robin"]),
                 (f"{name}: labels until τ ≥ 0.9 settled, adaptive", setting["labels_adaptive"]),
                 (f"{name}: adaptive / round-robin", setting["ratio_settled"]),
                 (f"{name}: replications", setting["replications"])]
    return rows


def _ppi_units_rows(result: dict) -> list[tuple[str, object]]:
    rows = []
    for row in result["rows"]:
        label = f"{row['unit']}, {row['design']}, n = {row['n']}"
        rows += [(f"{label}: coverage", row["coverage"]), (f"{label}: width / human-only", row["width_ratio"])]
    return rows + [("simulations", result["simulations"])]


def _ppi_judges_rows(result: list) -> list[tuple[str, object]]:
    rows = []
    for entry in result:
        label = f"judge {entry['accuracy']:.0%} accurate, {entry['design']}"
        rows += [(f"{label}: coverage", entry["coverage"]), (f"{label}: width / human-only", entry["width_ratio"])]
    return rows


# (name, function(seed, replications) -> result, rows(result) -> [(heading, value)]). One line per study.
SECTIONS = [
    ("pairwise", lambda seed, _: pairwise_simulation(seed),
     _keyed([("labels to τ ≥ 0.9, round-robin", "labels_round_robin"),
             ("  its standard error", "se_round_robin"),
             ("labels to τ ≥ 0.9, adaptive", "labels_adaptive"),
             ("  its standard error", "se_adaptive"),
             ("adaptive / round-robin", "ratio"),
             ("τ ≥ 0.9 after all 200, round-robin", "reached_at_end_round_robin"),
             ("τ ≥ 0.9 after all 200, adaptive", "reached_at_end_adaptive"),
             ("replications", "replications")])),
    ("pairwise_bt", lambda seed, replications: pairwise_bt_simulation(seed, replications), _pairwise_bt_rows),
    ("ppi", lambda seed, _: calibration_simulation(seed),
     _keyed([("PPI coverage at nominal 95 % (worst noise model)", "coverage"),
             ("PPI width / human-only width (worst)", "width_ratio"),
             ("expert labels per simulation", "n_human"),
             ("judge verdicts", "n_judge"),
             ("simulations", "simulations")])),
    ("ppi_judges", lambda seed, _: ppi_judges_simulation(seed), _ppi_judges_rows),
    ("ppi_units", lambda seed, _: unit_calibration_simulation(seed), _ppi_units_rows),
    ("cluster", lambda seed, replications: cluster_simulation(seed, replications),
     _keyed([("topics", "topics"),
             ("topic-clustered 95 % interval: coverage", "coverage"),
             ("  the percentile bounds alone", "coverage_percentile_only"),
             ("replications", "replications")])),
]


def _shown(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


class Command(BaseCommand):
    help = ("The studies of docs/statistics.md: pairwise (labels round-robin and adaptive pair choice need to"
            " reach Kendall τ ≥ 0.9, on the SurveyLens human preferences and from known Bradley–Terry strengths),"
            " calibrated scores (PPI coverage and width; ppi_units: units of several verdicts sampled by unit) and topic-clustered intervals. Prints one table; --json"
            " prints one object, a key per study.")

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")
        parser.add_argument("--replications", type=int, default=REPLICATIONS,
                            help=f"replications of the simulations from known strengths (default {REPLICATIONS})")
        parser.add_argument("--only", default="", help="comma-separated studies to run (default: all)")

    def handle(self, *args, seed: int, json: bool, replications: int, only: str, **options):
        wanted = {name.strip() for name in only.split(",") if name.strip()}
        sections = [section for section in SECTIONS if not wanted or section[0] in wanted]
        results = {name: function(seed, replications) for name, function, _ in sections}
        if json:
            self.stdout.write(_dumps(results))
            return
        rows = [(name, heading, _shown(value))
                for name, _, shown in sections for heading, value in shown(results[name])]
        widths = [max(len(row[n]) for row in [("study", "measure", "value"), *rows]) for n in range(3)]
        line = "| " + " | ".join(f"{{:{w}}}" for w in widths) + " |"
        self.stdout.write(line.format("study", "measure", "value"))
        self.stdout.write("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for row in rows:
            self.stdout.write(line.format(*row))
        self.stdout.write(f"seed {seed}")


def docs_tables(results: dict) -> str:
    """The markdown docs/statistics.md shows between its ``simulate_study`` markers, from the
    command's ``--json`` answer (its pairwise_bt, ppi_judges and cluster keys); a test checks the
    docs against the stored answer (docs/data/)."""
    lines = ["| setting | systems | replications | labels until settled, round-robin | adaptive | ratio |"
             " censored (round-robin / adaptive) |", "|---|---|---|---|---|---|---|"]
    for name, row in results["pairwise_bt"].items():
        lines.append(f"| `{name}` | {row['systems']} | {row['replications']} | {row['labels_round_robin']:.1f} ±"
                     f" {row['se_round_robin']:.1f} | {row['labels_adaptive']:.1f} ± {row['se_adaptive']:.1f} |"
                     f" {row['ratio_settled']:.3f} | {row['censored_round_robin']} / {row['censored_adaptive']} |")
    lines += ["", "| judge accuracy | sampling | PPI coverage (nominal 0.95) | width / human-only width | expert labels"
              " (mean) | simulations |", "|---|---|---|---|---|---|"]
    for row in results["ppi_judges"]:
        lines.append(f"| {row['accuracy']:.1f} | {row['design']} | {row['coverage']:.3f} | {row['width_ratio']:.3f} |"
                     f" {row['n_human']:.1f} | {row['simulations']} |")
    cluster = results["cluster"]
    lines += ["", "| topics | replications | coverage, corrected interval | coverage, percentile bounds alone |"
              " multiplier t·√(G/(G−1)) |", "|---|---|---|---|---|",
              f"| {cluster['topics']} | {cluster['replications']} | {cluster['coverage']:.3f} |"
              f" {cluster['coverage_percentile_only']:.3f} | {cluster['small_sample_factor']:.3f} |"]
    return "\n".join(lines)


def _dumps(results: dict) -> str:
    return json.dumps(results, indent=2, ensure_ascii=False)
