"""agreement: people label what an LLM judge labelled (one item per verdict, or a random
sample of them for calibrated scores); a label that differs from the judge's goes to a curator.

value ``{label, judge_correct, correction, note}`` (label from the item's step's labels).
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scoring.models import Verdict
from scoring.pipelines.judged import step_labels

from ..calibration.sampling import calibration_sample
from ..models import AnnotationProject, TargetKind
from .base import AnnotationKind, choice, only, text


def project_verdicts(project: AnnotationProject, task_ids: Sequence[int]):
    """The first-repeat labelled verdicts of the project's judge configuration on the tasks'
    reports (of its steps and systems, empty: all)."""
    verdicts = Verdict.objects.filter(judge_config=project.judge_config, report__task__in=task_ids, repeat=0).exclude(
        label=""
    )
    if project.steps:
        verdicts = verdicts.filter(step__in=project.steps)
    system_ids = list(project.systems.values_list("pk", flat=True))
    if system_ids:
        verdicts = verdicts.filter(report__system__in=system_ids)
    return verdicts


def step_label_union(used: Iterable[tuple[str, str]]) -> set[str]:
    """An agreement project's default labels from the (step, label) pairs of its verdicts: every
    label those steps can give (``step_labels``: a tie the judge never gave is still a choice),
    plus any label the verdicts use that their step's catalogue does not list."""
    used = list(used)
    return {label for _, label in used if label} | {label for step, _ in used for label in step_labels(step)}


def agreement_labels(*, label_set: dict, step: str) -> list[str]:
    """The labels an agreement item on a verdict of ``step`` offers: the step's own labels
    (``step_labels``) that the project's label set allows, in the step's order; the project's
    whole set for steps that score rather than label (or whose labels the project left out)."""
    allowed = list(label_set.get("label", ()))
    return [label for label in step_labels(step) if label in allowed] or allowed


class Agreement(AnnotationKind):
    name = AnnotationProject.Kind.AGREEMENT
    main_field = "label"
    value_fields = ("label", "judge_correct", "correction", "note")
    target_kinds = (TargetKind.VERDICT,)
    key_fields = ("label",)
    # what project_create takes for this kind beyond the common fields
    create_fields = ("systems", "judge_config", "steps", "sampling", "sample_size", "sampling_unit")
    undo_refused = (
        "your label on item {position} is final: this project is blind, and {when} the"
        " judge's verdict and any other annotator's label; ask a curator to correct it"
    )
    dashboard_sections = ("progress", "inter_annotator", "judge_agreement", "calibration")
    shows_after_label = True  # the judge's verdict, which is what the study audits
    export_columns = ("label", "judge_correct", "correction", "note")
    label_form = "annotation.forms.AgreementForm"
    panel_view = "annotation.views.display.agreement_view"
    blind_hides = "others' labels, the judge's verdict and which report and system each item is about"
    adjudicated_when = "the labels disagree (with each other or with the judge)"
    blind_attacks = ("verdict", "timing")  # they read the answers to labels of verdicts

    def label_set_defaults(self, *, judge_labels: Sequence[str] = ()) -> dict:
        return {"label": sorted(set(judge_labels))}

    def settings_clean(self, *, fields: dict) -> dict:
        if fields.get("judge_config") is None and fields.get("judge_config_id") is None:
            raise ValueError("judge_config: an agreement project labels the verdicts of one judge configuration")
        return {}

    def judge_labels(self, project: AnnotationProject, task_ids: Sequence[int]) -> set[str]:
        return step_label_union(project_verdicts(project, list(task_ids)).values_list("step", "label").distinct())

    def targets(self, project, task_ids, *, sample_size=None):
        found = project_verdicts(project, task_ids).order_by(
            "report__task", "report", "step", "target_kind", "target_id", "pk"
        )
        targets = [(TargetKind.VERDICT, pk, task_id, None) for pk, task_id in found.values_list("pk", "report__task")]
        return calibration_sample(project, targets, sample_size=sample_size)

    def value_clean(self, project, value, target) -> dict:
        verdict = target
        value = only(value, set(self.value_fields))
        judge_correct = value.get("judge_correct")
        if judge_correct is not None and not isinstance(judge_correct, bool):
            raise ValueError("value.judge_correct: expected true or false")
        labels = agreement_labels(label_set=project.label_set, step=verdict.step)
        label = choice(value, "label", labels, required=judge_correct is not True)
        label = label or verdict.label
        agrees = label == verdict.label
        if judge_correct is not None and judge_correct != agrees:
            raise ValueError(
                f"value.judge_correct: {judge_correct} contradicts label {label!r} (the judge said {verdict.label!r})"
            )
        return {"label": label, "judge_correct": agrees, "correction": text(value, "correction"),
                "note": text(value, "note")}

    def consensus_key(self, value: dict, *, order: Mapping[int, Any] | None = None) -> Any:
        return value["label"]

    def judge_label(self, target) -> str | None:
        return target.label if target is not None else None

    def summary(self, value: dict, *, sides: dict | None = None) -> str:
        label = str(value.get("label", ""))
        return label.replace("_", " ").capitalize() + (f" — {value['correction']}" if value.get("correction") else "")

    def statistics(self, project: dict) -> dict | None:
        return None  # judge vs people: ``dashboards.agreement.judge_agreement``; calibrated: ``calibration``


AGREEMENT = Agreement()
