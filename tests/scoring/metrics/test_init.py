"""The public API of ``scoring.metrics``: names other code relies on, and no Django."""

import subprocess
import sys
from pathlib import Path

import scoring.metrics as metrics

CONTRACT = {
    "checklist_scores", "threshold_from_clip_factor", "normalize_title", "match_references", "reference_prf",
    "match_rate", "majority_vote", "factual_accuracy", "recall_by_quartile", "rams", "tams", "bt_aspect_weights",
    "rubric_score", "structure_ratios", "relevance_rate", "reference_coverage", "document_importance",
    "citation_precision", "claim_coverage", "nugget_coverage", "win_rate", "geometric_mean", "bradley_terry", "elo",
    "bootstrap_ci", "rank_with_ci", "percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha",
    "spearman", "kendall_tau", "pairwise_concordance", "paired_t_test", "landis_koch",
}  # fmt: skip


def test_contract_names_are_exported():
    assert CONTRACT <= set(metrics.__all__)
    for name in metrics.__all__:
        assert hasattr(metrics, name), name
    assert len(metrics.__all__) == len(set(metrics.__all__))


def test_every_public_function_is_documented():
    for name in metrics.__all__:
        obj = getattr(metrics, name)
        if callable(obj):
            assert obj.__doc__ and len(obj.__doc__.strip()) > 20, name


def test_importing_needs_no_django():
    root = Path(__file__).resolve().parents[3]
    code = (
        "import sys, scoring.metrics\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'rest_framework', 'celery'})\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, env={"PYTHONPATH": str(root)})


def test_source_has_no_django_import():
    package = Path(metrics.__file__).parent
    for path in package.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "import django" not in text and "from django" not in text, path.name
