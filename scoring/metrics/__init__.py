"""Survey Eval Studio metric library: every protocol's scores and agreement statistics.

Pure functions over lists and NumPy arrays (stdlib, NumPy and SciPy only — no
Django), usable from pipelines, dashboards, exports and notebooks alike.  The
papers in ``shared/papers/`` are the specification; each function's docstring
cites the section or equation it implements.

Modules, by protocol:

* :mod:`.checklist` — DeepSynth-Eval checklist scores (§3.4, eq. 1–7);
* :mod:`.references` — reference normalisation, matching and P/R/F1 (ReportBench, SciSage);
* :mod:`.reportbench` — match rate, majority vote, factual accuracy, recall by quartile (ReportBench);
* :mod:`.surveylens` — RAMS, TAMS, Bradley–Terry aspect weights, rubric score, structure ratios (SurveyLens);
* :mod:`.deepscholar` — DeepScholar-bench retrieval, verifiability and synthesis metrics;
* :mod:`.ranking` — Bradley–Terry, Elo, bootstrap intervals, ranks with intervals;
* :mod:`.preference_ranking` — separation checks and a prior-regularised, cluster-bootstrapped Bradley–Terry;
* :mod:`.preference_design` — the expected information of the next comparison (adaptive pairwise studies);
* :mod:`.agreement` — percent agreement, Cohen's/Fleiss' κ, Krippendorff's α, Landis–Koch reading;
* :mod:`.agreement_intervals` — observed agreement and bootstrap intervals over items for κ and α;
* :mod:`.correlation` — Spearman, Kendall τ-b, pairwise concordance, paired t-test;
* :mod:`.calibration` — calibrated judge scores (PPI++ with inverse-probability weights, through
  ``ppi_py``) and the planner; :mod:`.sampling` — uniform, stratified and uncertainty sampling
  with inclusion probabilities. These two are imported by name, not re-exported here: ``ppi_py``
  loads numba, statsmodels and pandas, which no other metric needs.

Conventions: every function raises ``ValueError`` naming the problem for
invalid input and never coerces silently.  A ratio whose denominator is empty
(no item, no mention, no variation) is ``None`` rather than NaN, except where
the protocol fixes a value (reference P/R/F1, RAMS/TAMS and document
importance give 0).  Scores are on a 0–1 scale except DeepSynth-Eval's,
which the paper reports in percent.
"""

from . import (
    agreement, agreement_intervals, checklist, correlation, deepscholar, preference_design, preference_ranking, ranking,
    references, reportbench, surveylens,
)
from .agreement import *  # noqa: F403
from .agreement_intervals import *  # noqa: F403
from .checklist import *  # noqa: F403
from .correlation import *  # noqa: F403
from .deepscholar import *  # noqa: F403
from .preference_design import *  # noqa: F403
from .preference_ranking import *  # noqa: F403
from .ranking import *  # noqa: F403
from .references import *  # noqa: F403
from .reportbench import *  # noqa: F403
from .surveylens import *  # noqa: F403

# Each module's ``__all__`` is its public API; the package re-exports them all.
__all__ = [
    *checklist.__all__,  # DeepSynth-Eval
    *references.__all__,  # ReportBench / SciSage reference matching
    *reportbench.__all__,  # ReportBench statements, recall by quartile
    *surveylens.__all__,  # SurveyLens
    *deepscholar.__all__,  # DeepScholar-bench
    *ranking.__all__,  # Bradley–Terry, Elo, bootstrap
    *preference_ranking.__all__,  # separation checks, weak prior, cluster bootstrap
    *preference_design.__all__,  # expected information of the next comparison
    *agreement.__all__,  # inter-annotator agreement
    *agreement_intervals.__all__,  # bootstrap intervals over items for κ and α
    *correlation.__all__,  # rank correlation, paired t-test
]
