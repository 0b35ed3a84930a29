"""What each label means, beside the controls (issue 38: annotators read "Correct" as "the judge
was correct"). Defaults per judged step, in the words of its paper; a project's own text
(``AnnotationProject.label_help``, edited with the guidelines and versioned with them) replaces
a default label by label. Data, not code: nothing here branches on a kind."""

from collections.abc import Iterable

# (step, label) → its meaning; (None, label) → the meaning where no step says otherwise.
DEFAULTS: dict[tuple[str | None, str], str] = {
    ("deepsynth.checklist_group", "correct"): "The report states this checklist point, and states it correctly "
                                             "(DeepSynth-Eval §3.4). About the report, not about the judge.",
    ("deepsynth.checklist_group", "omitted"): "The report does not state this point at all.",
    ("deepsynth.checklist_group", "incorrect"): "The report states this point, but gets it wrong.",
    ("reportbench.factuality", "correct"): "The statement is what the cited paper says (ReportBench's factuality check).",
    ("reportbench.factuality", "incorrect"): "The cited paper does not say this, or says otherwise.",
    ("reportbench.consistency", "consistent"): "The statement agrees with the cited source.",
    ("reportbench.consistency", "inconsistent"): "The statement contradicts or is not backed by the cited source.",
    (None, "support"): "The cited source fully supports the claim (DeepScholar-bench).",
    (None, "partial_support"): "The cited source supports part of the claim only.",
    (None, "not_support"): "The cited source does not support the claim.",
    (None, "important"): "The reference is one a good related-work section should cite.",
    (None, "not_important"): "The reference is not needed for the section.",
    (None, "win"): "The first-shown text is better than the second.",
    (None, "tie"): "Neither is better.",
    (None, "loss"): "The second-shown text is better than the first.",
    (None, "0"): "Not relevant to the query.",
    (None, "1"): "Somewhat relevant.",
    (None, "2"): "Highly relevant.",
    (None, "accept"): "The proposal is right as it is: it goes into the benchmark unchanged.",
    (None, "edit"): "Right in substance, but needs your wording: change it, then it goes in as you wrote it.",
    (None, "reject"): "Wrong, unverifiable, a duplicate or off the task: it stays out (say why).",
    (None, "left"): "Report A is better.",
    (None, "right"): "Report B is better.",
    (None, "correct"): "What the report says here is right. About the report, not about whether the judge was right.",
    (None, "omitted"): "The report leaves this out.",
    (None, "incorrect"): "What the report says here is wrong.",
}


def label_help(*, labels: Iterable[str], step: str = "", own: dict | None = None) -> list[tuple[str, str]]:
    """``(label, meaning)`` for each label: the project's own text, else the step's default, else
    the label's general default; labels without any meaning are left out."""
    own = own or {}
    out = []
    for label in labels:
        text = own.get(label) or DEFAULTS.get((step, label)) or DEFAULTS.get((None, label), "")
        if text:
            out.append((label, text))
    return out


def label_help_parse(text: str, *, labels: Iterable[str], defaults: dict[str, str] | None = None) -> dict[str, str]:
    """The project form's "label: meaning" lines as ``{label: meaning}``; ``ValueError`` naming the
    line for a label outside ``labels`` or a line without a colon. Lines equal to the default the
    form showed (``defaults``) are not stored, so a default improved later reaches the project."""
    defaults = defaults or {}
    known = list(labels)
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label, colon, meaning = line.partition(":")
        label, meaning = label.strip(), meaning.strip()
        if not colon or not label:
            raise ValueError(f"label_help: line {number}: write “label: what it means”")
        if label not in known:
            raise ValueError(f"label_help: line {number}: {label!r} is not a label of this project "
                             f"({', '.join(known)})")
        if meaning and meaning != defaults.get(label, DEFAULTS.get((None, label))):
            out[label] = meaning[:500]
    return out
