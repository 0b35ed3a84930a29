"""Forms of the curator's project pages: they turn POST data into the arguments of
``project_create``, ``project_update``, ``membership_add``, ``account_invite`` and ``invitations_create``. Type coercion
only; the rules live in the services, whose ``ValueError("field: why")`` comes back onto the form
field it names through ``attach_service_error``."""

from datetime import timedelta

from django import forms
from django.contrib.auth import get_user_model

from benchmark.forms import SystemsField, TaskFilterForm, TaskPickerForm
from benchmark.models import System, Task, TaskSet
from core.bounded import HOLD_SECONDS_MAX, SMALL_MAX, BoundedIntegerField, IdChoiceField, IdMultipleChoiceField
from scoring.judges.steps import step_label
from scoring.models import JudgeConfig, Verdict

from .kinds import kind_of
from .label_help import label_help, label_help_parse
from .models import DEFAULT_HOLD, DEFAULT_UNIFORM_SHARE, VERIFY_TARGETS, AnnotationProject, Role, TargetKind
from .services.invitations import invitees_parse

Kind = AnnotationProject.Kind

# A service's field name → the form field showing it.
SERVICE_FIELDS = {
    "hold_duration": "hold_minutes", "label_set": "labels", "task_set": "task_set", "tasks": "tasks",
    "steps": "steps", "dimensions": "dimensions", "judge_config": "judge_config", "overlap": "overlap",
    "item_kinds": "item_kinds", "name": "name", "guidelines": "guidelines", "kind": "kind", "status": "status", "username": "username",
    "role": "role", "user": "username", "pair_choice": "pair_choice", "uniform_share": "uniform_share",
    "pairs_budget": "pairs_budget", "criteria": "criteria", "component": "component", "emails": "emails",
}
_SCALE_FIELDS = {"min": "scale_min", "max": "scale_max", "anchors": "anchors", "adjudicate_beyond": "adjudicate_beyond"}


GUIDELINES_HELP = ("markdown; shown in every workspace of the project, open on an annotator's first item and"
                   " again after each change; every label records the version its annotator had seen")


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


class ServiceErrorForm(forms.Form):
    def attach_service_error(self, exc: ValueError) -> None:
        """Put ``"field: why"`` on the field it names (``label_set.label`` on ``labels``), else on the form."""
        field, _, why = str(exc).partition(": ")
        parts = field.split(".")
        name = _SCALE_FIELDS.get(parts[1]) if parts[0] == "scale" and len(parts) > 1 else SERVICE_FIELDS.get(parts[0])
        if why and name in self.fields:
            self.add_error(name, why)
        else:
            self.add_error(None, str(exc))


def _anchors(raw: str) -> dict:
    """``"1=poor, 3=adequate, 5=excellent"`` as ``{point: meaning}`` (the service checks the points)."""
    anchors = {}
    for part in _split(raw):
        point, _, meaning = part.partition("=")
        anchors[point.strip()] = meaning.strip()
    return anchors


def _scale(data: dict) -> dict:
    scale = {"min": 1 if data["scale_min"] is None else data["scale_min"],
             "max": 5 if data["scale_max"] is None else data["scale_max"], "anchors": _anchors(data["anchors"])}
    if data["adjudicate_beyond"] is not None:
        scale["adjudicate_beyond"] = data["adjudicate_beyond"]
    return scale


# How a field of the form becomes an argument of ``project_create`` (others: as cleaned).
_ARGUMENTS = {
    "systems": lambda data: list(data["systems"]),
    "component": lambda data: data["component"] or "report",
    "dimensions": lambda data: _split(data["dimensions"]) or None,
    "pair_choice": lambda data: data["pair_choice"] or AnnotationProject.PairChoice.ROUND_ROBIN,
    "uniform_share": lambda data: DEFAULT_UNIFORM_SHARE if data["uniform_share"] is None else data["uniform_share"],
    "sampling": lambda data: data["sampling"] or AnnotationProject.Sampling.ALL,
    "sampling_unit": lambda data: data["sampling_unit"] or AnnotationProject.SamplingUnit.VERDICT,
    "criteria": lambda data: _split(data["criteria"]) or None,
    "scale": _scale,
}


class ProjectCreateForm(TaskPickerForm, ServiceErrorForm):
    kind = forms.ChoiceField(choices=Kind.choices, widget=forms.RadioSelect, initial=Kind.choices[0][0])
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    guidelines = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="Guidelines for annotators",
        help_text=GUIDELINES_HELP,
    )
    task_set = IdChoiceField(
        queryset=TaskSet.objects.order_by("name", "-version"), required=False,
        empty_label="— or pick tasks below —",
    )
    tasks = IdMultipleChoiceField(
        queryset=Task.objects.none(), required=False, widget=forms.CheckboxSelectMultiple,
        help_text="tick tasks, or tick none to take every task the filters match",
    )
    item_kinds = forms.MultipleChoiceField(
        choices=[(kind, TargetKind(kind).label) for kind in VERIFY_TARGETS], required=False,
        widget=forms.CheckboxSelectMultiple, label="Item kinds (verify)", help_text="none ticked: every kind",
    )
    systems = SystemsField(
        queryset=System.objects.order_by("name", "version"), required=False, widget=forms.CheckboxSelectMultiple,
        label="Systems (pairwise, agreement)", help_text="none ticked: every system",
    )
    component = forms.CharField(max_length=30, initial="report", label="Component (pairwise)")
    judge_config = IdChoiceField(queryset=JudgeConfig.objects.order_by("name"), required=False,
                                          label="Judge configuration (agreement)", empty_label="— choose a judge —")
    steps = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple,
                                      label="Judge steps (agreement)", help_text="none ticked: every step")
    sampling = forms.ChoiceField(
        choices=[(value, label) for value, label in AnnotationProject.Sampling.choices
                 if value != AnnotationProject.Sampling.CHOSEN],
        initial=AnnotationProject.Sampling.ALL, required=False, label="Which verdicts (agreement)",
        help_text="a random sample records each verdict's inclusion probability, so its labels calibrate the judge's"
                  " scores (Calibrated scores on the run page)",
    )
    sampling_unit = forms.ChoiceField(
        choices=AnnotationProject.SamplingUnit.choices, initial=AnnotationProject.SamplingUnit.VERDICT, required=False,
        label="Sample by (agreement, sampled)",
        help_text="group or sentence: the sample draws whole DeepSynth checklist groups or DeepScholar claim sentences"
                  " (every verdict of each), so the group score or claim coverage is calibrated, and not the"
                  " per-verdict metrics (item reward, citation precision); its judge step is then the only one")
    sample_size = BoundedIntegerField(min_value=1, max_value=1_000_000, required=False, label="Sample size (agreement)",
                                      help_text="how many to draw: verdicts, or the groups or sentences chosen in"
                                                " 'Sample by' (adaptive: the expected number)")
    overlap = BoundedIntegerField(min_value=1, max_value=SMALL_MAX, required=False, label="Labels per item (k)",
                                 help_text="empty: 2 for verify (review, then cross-check), 1 otherwise")
    blind = forms.BooleanField(required=False, initial=True,
                               help_text="annotators see no judge verdict or other label before giving theirs")
    reveal = forms.ChoiceField(
        choices=[("", "The kind's default (pairwise, rating: at close; agreement, verify: after each label)"),
                 *AnnotationProject.Reveal.choices],
        required=False, label="Blind: reveal to an annotator",
        help_text="when one who labelled an item learns what it hid: others' labels, the judge's verdict, which"
                  " reports and systems it compares; everyone learns it when the study closes",
    )
    hold_minutes = BoundedIntegerField(min_value=1, max_value=HOLD_SECONDS_MAX // 60, initial=int(DEFAULT_HOLD.total_seconds() // 60),
                                      label="Hold time (minutes)", help_text="how long a claimed item stays reserved")
    labels = forms.CharField(required=False, label="Labels",
                             help_text="comma-separated; empty: the kind's labels (agreement: the judge's)")
    dimensions = forms.CharField(required=False, label="Dimensions (pairwise)",
                                 help_text="comma-separated; empty: organization, coverage, synthesis, citations")
    pair_choice = forms.ChoiceField(choices=AnnotationProject.PairChoice.choices, required=False,
                                    initial=AnnotationProject.PairChoice.ROUND_ROBIN, label="Pairs (pairwise)")
    uniform_share = forms.FloatField(min_value=0, max_value=1, required=False, initial=DEFAULT_UNIFORM_SHARE,
                                     label="Adaptive: share of uniform pairs",
                                     help_text="0 to 1; these pairs are drawn at random, the rest among neighbours"
                                               " in doubt")
    pairs_budget = BoundedIntegerField(min_value=1, max_value=10**6, required=False, label="Adaptive: pairs in all",
                                       help_text="empty: every ordered pair of reports (as many as the round-robin)")
    criteria = forms.CharField(required=False, label="Criteria (rating)",
                               help_text="comma-separated, e.g. coverage, structure, relevance; empty: each task's"
                                         " rubric criteria of the component")
    scale_min = forms.FloatField(required=False, initial=1, min_value=0, max_value=100, label="Scale from (rating)")
    scale_max = forms.FloatField(required=False, initial=5, min_value=0, max_value=100, label="Scale to (rating)",
                                 help_text="1–5 by default; up to 0–100")
    anchors = forms.CharField(required=False, label="Anchors (rating)",
                              help_text="what points mean, comma-separated: 1=poor, 3=adequate, 5=excellent")
    adjudicate_beyond = forms.FloatField(required=False, min_value=0, label="Adjudicate beyond (rating)",
                                         help_text="scores of a criterion further apart go to a curator; empty: a"
                                                   " quarter of the scale")

    def __init__(self, *args, task_filter: TaskFilterForm, **kwargs) -> None:
        super().__init__(*args, task_filter=task_filter, **kwargs)
        steps = Verdict.objects.order_by("step").values_list("step", flat=True).distinct()
        self.fields["steps"].choices = [(step, step_label(step)) for step in steps]

    def service_arguments(self) -> dict:
        """Keyword arguments for ``project_create`` (without ``created_by``)."""
        data = self.cleaned_data
        kind = data["kind"]
        chosen = list(data["tasks"])
        tasks = chosen or (list(self.matching) if self.task_filter.is_filtering and not data["task_set"] else [])
        labels = _split(data["labels"])
        annotation_kind = kind_of(kind)
        arguments = {
            "name": data["name"], "kind": kind, "description": data["description"],
            "guidelines": data["guidelines"], "tasks": tasks,
            "task_set": data["task_set"], "overlap": data["overlap"], "blind": data["blind"],
            "reveal": data["reveal"] or None, "hold_duration": timedelta(minutes=data["hold_minutes"]),
            "label_set": {annotation_kind.main_field: labels} if labels else None,
        }
        for name in annotation_kind.create_fields:  # the kind's own settings, as project_create takes them
            arguments[name] = _ARGUMENTS.get(name, lambda data, name=name: data[name])(data)
        return arguments


class ProjectEditForm(ServiceErrorForm):
    """What ``project_update`` may change once labelling started."""

    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    guidelines = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 10}),
                                 label="Guidelines for annotators", help_text=GUIDELINES_HELP)
    hold_minutes = BoundedIntegerField(min_value=1, max_value=HOLD_SECONDS_MAX // 60, label="Hold time (minutes)")
    status = forms.ChoiceField(choices=AnnotationProject.Status.choices,
                               help_text="paused and closed projects hand out and accept no labels")
    label_help = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4}), label="What each label means",
        help_text="one line per label, “label: what it means”; shown beside the controls in the workspace; "
                  "a change is a new version of the guidelines")

    @classmethod
    def for_project(cls, project: AnnotationProject, data=None) -> "ProjectEditForm":
        labels = project_labels(project)
        shown = dict(label_help(labels=labels, step=_one_step(project), own=project.label_help))
        initial = {"name": project.name, "description": project.description, "guidelines": project.guidelines,
                   "status": project.status,
                   "hold_minutes": max(1, round(project.hold_duration.total_seconds() / 60)),
                   "label_help": "\n".join(f"{label}: {text}" for label, text in shown.items())}
        form = cls(data, initial=initial)
        form.labels = labels
        form.defaults = dict(label_help(labels=labels, step=_one_step(project)))
        return form

    def clean_label_help(self) -> dict:
        try:
            return label_help_parse(self.cleaned_data["label_help"], labels=self.labels, defaults=self.defaults)
        except ValueError as exc:
            raise forms.ValidationError(str(exc).partition(": ")[2]) from None

    def service_arguments(self) -> dict:
        data = self.cleaned_data
        return {"name": data["name"], "description": data["description"], "guidelines": data["guidelines"],
                "status": data["status"], "label_help": data["label_help"],
                "hold_duration": timedelta(minutes=data["hold_minutes"])}


def project_labels(project: AnnotationProject) -> list[str]:
    """The values of the project's main label field (what its annotators choose among)."""
    main = {"verify": "decision", "pairwise": "choice", "agreement": "label"}.get(project.kind, "label")
    return list((project.label_set or {}).get(main, []))


def _one_step(project: AnnotationProject) -> str:
    return project.steps[0] if len(project.steps or []) == 1 else ""


class MemberAddForm(ServiceErrorForm):
    username = forms.ModelChoiceField(queryset=get_user_model().objects.none(), to_field_name="username",
                                      label="Account", empty_label="— choose an account —")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)

    def __init__(self, *args, project: AnnotationProject, **kwargs) -> None:
        super().__init__(*args, prefix="add", **kwargs)
        self.fields["username"].queryset = (
            get_user_model().objects.filter(is_active=True).exclude(project_memberships__project=project)
            .order_by("username")
        )


class InviteForm(ServiceErrorForm):
    username = forms.CharField(max_length=150, label="New account's user name")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, prefix="invite", **kwargs)


class EmailInviteForm(ServiceErrorForm):
    """Invitations by e-mail (``invitations_create``): pasted lines, an uploaded CSV, or both."""

    emails = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 5}), label="E-mail addresses",
        help_text="one a line: a@lab.org, Ada Lovelace <ada@lab.org>, or CSV lines such as ada@lab.org,Ada Lovelace")
    emails_file = forms.FileField(required=False, label="or a CSV or text file of them")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, prefix="email", **kwargs)

    def clean(self):
        """``invitees``: the pasted lines' and the file's, each source's bad lines named on its field."""
        data = super().clean()
        invitees = []
        sources = [("emails", "", data.get("emails") or "")]
        upload = data.get("emails_file")
        if upload is not None:
            try:
                sources.append(("emails_file", f"{upload.name}: ",
                                upload.read(INVITE_FILE_MAX + 1)[:INVITE_FILE_MAX].decode("utf-8-sig")))
            except UnicodeDecodeError:
                self.add_error("emails_file", f"{upload.name}: not UTF-8 text")
        for field, prefix, text in sources:
            try:
                invitees += invitees_parse(text)
            except ValueError as exc:
                self.add_error(field, prefix + str(exc).removeprefix("emails: "))
        if not invitees and not self.errors:
            self.add_error("emails", "paste at least one address, or choose a file")
        data["invitees"] = invitees
        return data


INVITE_FILE_MAX = 512 * 1024  # bytes of an uploaded list read: 500 addresses are far less
