"""SurveyLens (§3.3) and SciSage/SurveyScope (§5.1): survey-level evaluation against the human survey.

Modules: ``ssr`` reads each side as a Structured Survey Representation; ``pairwise`` is the
``survey.pairwise`` step both protocols ask (and their common base class); ``scored_calls``
asks calls that score several targets at once and reads their scores back; ``surveylens`` and
``surveyscope`` are the two protocols' own steps and score cards.

Both protocols compare a generated report with its task's human-written ``Survey``. Each side
is read as a Structured Survey Representation (SSR, SurveyLens §3.2): the report's from its
stored parse (outline, sections that are not a reference list, reference entries); the human
survey's from its stored SSR (``Survey.outline``/``content``/``references``; a survey without
one is parsed from ``full_text``; without SSR references, its ``SurveyCitation`` bibliography).

SurveyLens job steps
--------------------
``surveylens.alignment`` (no LLM call)
    Canonical alignment entries per component (Table 3): outline titles (leading section
    numbers stripped: "2.1 Methods" and "METHODS" are the same entry), "heading\\ncontent" for
    every section with text, reference titles (else their text). Entries of both sides are
    embedded with the configuration's ``embedding_backend`` through ``embed_cached``, so a
    re-run or re-score never embeds a text twice. One verdict per component (target_kind
    ``alignment``, key the component, label ``embedded``) records the embedder and the
    fingerprint of the entries; an embedding endpoint that failed is an errored verdict.
``surveylens.rubric``
    ``surveylens.rubric`` once per component (and repeat) over the criteria of the task's
    discipline and of the task itself that are not rejected and score on 5 points; one
    verdict per criterion (target_kind ``rubric_criterion``, label ``scored``, score 1–5).
``survey.pairwise``
    ``survey.pairwise`` against the human survey, asked twice per repeat with the positions
    swapped (target_kind ``human_pairwise``, key ``report_first`` / ``human_first``); the
    verdict's label is the outcome for the report: win, tie or loss.

SurveyScope job steps: ``scisage.quality`` (one call per repeat over the 10-point quality
dimensions, and one ``scisage.section_structure`` call per repeat for the 1–5 section-level
structure; target_kind ``quality_dimension``) and the same ``survey.pairwise`` (its verdicts
are shared with SurveyLens: the same question about the same texts is asked once). Reference
TP/F1 need no judge: they are computed when scoring.

Scores (``score_report``, from stored rows only; a failed item is counted, never scored 0)
------------------------------------------------------------------------------------------
SurveyLens metric keys:

* ``rubric_outline``, ``rubric_content``, ``rubric_reference`` — S = 5 · Σ w̃_k · x_k / 5
  (:func:`rubric_score`, eq. 3 and App. C) over the component's aspects k: x_k is the mean
  score (1–5) of the aspect's judged criteria (each the mean of its finished repeats — the
  paper averages three trials), w_k the mean ``RubricCriterion.weight`` of its criteria (the
  aspect's Bradley–Terry weight, carried by each criterion of the aspect), normalised over the
  aspects with a judged criterion. ``None`` when the component has no criterion, none was
  judged, or every weight is 0; ``rubric_mean`` is the mean of the defined components;
  ``rubric_criteria_<component>`` counts the criteria; ``aspect_<component>_<aspect>`` is
  each aspect's mean score x_k (1–5, Fig. 5).
* ``rams_<component>`` with ``rams_precision_<component>`` / ``rams_recall_<component>``
  (:func:`rams`, eq. 5, Algorithm 1) and ``tams_<component>`` (:func:`tams`, eq. 6) on cosine
  similarities of the stored vectors; ``entries_<component>`` / ``gold_entries_<component>``
  count the entries and ``tau_<component>`` records the threshold used. A report without
  entries scores 0 (the protocol's value); a human survey without entries for a component
  leaves it ``None`` (nothing to align with: the released luciferase survey has no reference
  list) without counting a failure.
* ``structure_<statistic>`` — generated / human ratio per Table 6 statistic
  (:func:`structure_ratios`); both sides' statistics come from the same parser
  (``benchmark.parsing``; sentences by the SurveyLens formula), ``None`` where the human
  value is 0.
* ``win_rate_vs_human`` — :func:`win_rate` over every judged comparison (ties count half);
  ``pairwise_judged``; ``pairwise_position_consistency``, the share of repeats whose two
  orders agree.

SurveyScope metric keys: ``reference_tp``, ``reference_precision``, ``reference_recall``,
``reference_f1`` (:func:`reference_prf`: deduplicated sets, identifiers then titles) against
the task's gold references that are not rejected, else the human survey's own reference list
(``None`` when there is none), with ``references`` / ``gold_references`` counts. With
``{"variants": {"references": "scisage_upstream"}}`` the released ``reference_eval.py`` is
reproduced: titles only, gold titles split into sub-sentences, every similar pair counted, and a
system's precision, recall and F1 pooled over its reports' counts (run cards and leaderboard);
``quality_<dimension>`` — the mean of the finished repeats on its scale rescaled linearly to
0–100 as the paper does, 100 · score / scale (× 10 for 1–10: 7.758 is reported as 77.58; × 20
for the 1–5 section structure, so 4.25 is 85 and 5 is 100 as in Table 4) — and ``quality_mean``,
the mean of the defined dimensions (the paper reports no mean); ``win_rate_vs_human`` and the
pairwise counts as above. The dimensions are the task's own criteria with ``scale_max`` 10 when
it has any, else the paper's four: on 1–10 (App. A.4–A.6) ``language`` (formality, clarity, no
redundancy), ``critical`` (critical analysis, original insights, future directions) and
``structure`` (document-level structure: coherent structure, thematic coverage, scholarly
synthesis; Table 4's "Document"), and on 1–5 ``section_structure`` (§5.1.2 section-level
structure, Table 3's rubric; Table 4's "Section").

Configuration (``JudgeConfig.options``, else ``settings.SURVEYLENS_ALIGNMENT``, else the
defaults): ``surveylens_tau`` — τ per component as an object, or a preset name
(:data:`SURVEYLENS_TAU_PRESETS`): ``"default"``, outline 0.7, content 0.7, reference 0.8, used
when nothing is set; ``"upstream"``, 0.95 for all three, the released configuration
(``scripts/config/eval_quantitative_config.json``, with Qwen3-Embedding-8B; far too strict for
the offline MiniLM); ``surveylens_lambda`` — the redundancy penalty λ, default 1.0 (as
released); ``surveylens_tams_mode`` — ``margin`` (eq. 6, default) or ``gated`` (the released
code). The paper states no τ values. So ``{"surveylens_tau": "upstream", "surveylens_tams_mode":
"gated"}`` computes RAMS and TAMS as the released ``eval_quantitative.py`` does (RAMS clamps a
negative generated–generated similarity at 0 in every configuration, as released). τ and λ only
enter scoring: changing them and
re-scoring needs no embedding.
"""
