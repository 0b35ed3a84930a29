"""DeepScholar-bench (paper §4, App. 8.3–8.4, Table 2): seven metrics and their geometric mean.

One module per judge step, each asking its questions and computing its metrics from the stored
verdicts: ``organization``, ``nuggets``, ``relevance``, ``reference_coverage`` (reference
importance), ``citation_support`` (citation precision and claim coverage, one judge step);
``document_importance`` needs no judge; ``documents`` finds the report's cited works and claim
sentences; ``inputs`` reads options and the task's query and exemplar; ``pipeline`` runs the
steps and assembles the card with its geometric mean.

One job step per judge step; each stores one verdict per judged target and reuses every
finished verdict on the same question (``raw_response["input_hash"]``), so a second run of
the same configuration makes no call.

``deepscholar.organization`` (target_kind ``organization``, target_key ``report_first`` /
``report_second``, ``repeat`` 0..k-1 for ``JudgeConfig.repeats`` = k)
    The report and the task's exemplar (the human-written related-work section,
    ``Survey.full_text``) are compared twice, the report once as A and once as B, "to avoid
    position bias" (§8.3.1). Each order is its own comparison, labelled from the report's
    side: win, tie or loss. A win counts 1 and a tie ½ — the paper reports "a win rate
    including ties" (§8.6.1), which is :func:`win_rate`; so a report counts as better only as
    far as it wins in both orders, and a preference that flips with the order is worth ½,
    like a tie (the exemplar against itself scores .500, Table 2).

``deepscholar.nugget_support`` (``nugget``, target_id the nugget)
    The task's nuggets that are not rejected, in batches of ``options["nugget_batch_size"]``
    (10, as in AutoNuggetizer) per call; labels support / partial_support / not_support.
    Scores (:func:`nugget_coverage`): ``nugget_coverage`` is the paper's reported strict-all
    score; ``nugget_coverage_all`` (partial = ½), ``nugget_coverage_strict_vital`` and
    ``nugget_coverage_vital`` the other modes. No nugget → ``None`` and a note (nuggets come
    from the import or from the ``propose`` command); with ``{"variants": {"nugget_coverage":
    "upstream"}}`` an empty set scores 0.0 in its modes, as the released nuggetizer does.

The report's documents S: every distinct work it cites inline or lists in its reference
list ("any valid ArXiv links found within the report", §8.6.1, not only arXiv ones). A
numeric citation takes the ``Report.sources`` entry with that ``index`` (STORM's unified
index) when the sources carry one, else the parsed reference list entry; a work is
identified by arXiv id, DOI, URL or title and read from stored data only: its
``Report.sources`` document (the snippet the system itself used) or the ``BibEntry``
abstract. A document without stored text gets the verdict error "source not available",
never a call.

``deepscholar.relevance`` (``cited_document``, target_key the document's identity)
    Graded 0/1/2; ``relevance_rate`` = Σ grade / 2|S| (:func:`relevance_rate`).

``deepscholar.reference_importance`` (``gold_reference``, target_id the GoldReference)
    Whether each exemplar reference (not rejected) is important. Importance belongs to the
    task, not to the report: it is asked once per task and configuration — a finished verdict
    on the same question stored for another report of the task is copied (no call, no cost,
    ``raw_response["copied_from"]``), and the asking is serialised per task (a PostgreSQL
    advisory lock) so reports judged in parallel do not ask twice. A reference an expert has
    settled (review status accepted or edited) keeps its curated ``important`` flag and is
    not asked; so does an imported reference of a task whose release labelled importance
    (DeepScholar-bench's ``important_citations.csv``, :func:`importance_known`). The reference
    is shown by its metadata and abstract, when stored.
    ``reference_coverage`` = |cited ∩ E| / |E| over the references whose importance is known
    (:func:`reference_coverage`), a cited work matching an exemplar reference by identifier or
    title (:func:`match_references`).

Document importance (no judge)
    DI = min(median cites(S) / median cites(S*), 1) (:func:`document_importance`) with S* all
    the exemplar's references; counts come from ``BibEntry.citation_count`` or a count field of
    the ``Report.sources`` document. Works without a count are left out; ``None`` when no
    work of S or of S* has one.

``deepscholar.citation_support`` (``citation_pair``, target_key ``<sentence>:<document>``)
    Claim sentences are the parsed sentences with at least 50 characters once their citation
    markers are removed (the released code's cut-off). Each (sentence, cited document) pair is
    one call. ``citation_precision`` averages over the citations of the claim sentences
    (:func:`citation_precision`); its ``upstream`` variant averages each claim sentence's own
    precision over every claim sentence, an uncited one counting 0 (the released ``cite_p.py``;
    ``claim_sentences_uncited`` counts them). Claim coverage (:func:`claim_coverage`): sentence i is
    covered at window w when a document cited by a sentence within ±w supports it, or the
    query context does — the paper treats the paper's title and abstract as "an implicitly
    cited reference for each sentence", asked once per sentence (target_key ``<i>:query``).
    So every pair within ±``options["claim_max_window"]`` (5, Fig. 5's range) is asked, and
    ``claim_coverage_by_window`` = {"0": …, "5": …}; ``claim_coverage`` is the value at
    ``options["claim_window"]`` (1, the paper's main results). A pair is judged one document
    at a time, so support that needs two documents together is not credited (a lower bound).
    The step's prompt asks whether the source backs every claim, also for precision, where
    the paper credits support of one claim: precision is as strict as coverage here.

``geometric_mean``
    Table 2's aggregate: the geometric mean of a system's seven metric *means* (how Table 2's
    "Geo. Mean" column follows from its other columns), never a mean of report-level
    geometric means; a 0 anywhere makes it 0, as the formula does. The systems of a run are
    compared over one common set of metrics (:func:`geometric_means_over_common`, in
    ``compare_systems``): a metric undefined for any of them (e.g. document importance without
    citation counts) is left out for all, and ``geometric_mean_over`` names the metrics used
    — the paper likewise leaves metrics out for the human exemplars (Table 2, note 1). A
    report's own ``geometric_mean`` is given only when all seven are defined (else ``None``):
    dropping undefined metrics per report would let a report with two metrics outrank one
    with seven. The leaderboard computes the same aggregate from its own system means.

Failed items (judge errors, malformed answers, documents without text) are counted in
``items_failed`` and left out of every metric, never counted as zeros; a verdict counts only
while its fingerprint matches the current question (a changed report is judged again).
"""
