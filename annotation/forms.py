"""Forms of the annotation workspace: they turn POST data into the ``value`` dicts the label
services take. Type coercion only; the business rules (what a value may contain) live in
``annotation.services.values`` and come back as ``ValueError`` naming the field, which
``service_error_attach`` puts on the matching form field.
"""

import re
import uuid

from django import forms
from django.core.exceptions import FieldDoesNotExist
from django.db.models import URLField
from django.forms.models import fields_for_model
from django.utils.module_loading import import_string

from benchmark.models import BibEntry, GoldReference
from core.bounded import BoundedIntegerField, IdChoiceField, bounded_formfield
from core.converters import MAX_ID

from .kinds import kind_of
from .kinds.pairwise import CHOICE_LABELS  # the words of each kind's values live with the kind
from .kinds.verify import DECISION_LABELS, REASON_LABELS
from .models import VERIFY_TARGETS, TargetKind
from .services.additions import ADD_FIELDS, BIB_FIELDS


def _humanize(value: str) -> str:
    return value.replace("_", " ").capitalize()


def _choices(values, labels: dict | None = None) -> list[tuple[str, str]]:
    return [(value, (labels or {}).get(value) or _humanize(value)) for value in values]


class OptionsMixin:
    """Radio options with their keyboard shortcuts, for templates that render inputs by hand."""

    def options(self, name: str, keys=None) -> list[dict]:
        """``keys``: a mapping value → keys, a list of keys by position, or None for 1, 2, 3 …
        (several keys for one option are separated by spaces: ``"1 ArrowLeft"``)."""
        bound = self[name]
        current = bound.value()
        options = []
        for position, (value, label) in enumerate(bound.field.choices):
            if isinstance(keys, dict):
                key = keys.get(value, "")
            elif keys is not None:
                key = keys[position] if position < len(keys) else ""
            else:
                key = str(position + 1) if position < 9 else ""
            options.append({
                "name": bound.html_name, "value": value, "label": label, "id": f"{bound.auto_id}_{position}",
                "checked": current is not None and str(current) == str(value), "key": key,
                "hint": key.split()[0] if key else "",
            })
        return options


DECISION_KEYS = {"accept": "a", "edit": "e", "reject": "r"}
CHOICE_KEYS = {"left": "1 ArrowLeft", "right": "2 ArrowRight", "tie": "3 t"}
JUDGE_KEYS = {"yes": "y", "no": "w"}


class LabelForm(OptionsMixin, forms.Form):
    """Every label form carries the token generated when it was rendered: resubmitting the
    same form (a retry after a network error, a double click) stores one label."""

    client_token = forms.UUIDField(widget=forms.HiddenInput)
    # set by static/js/workspace.js on submit (forms marked data-timed): how long the item took
    seconds_taken = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)

    @staticmethod
    def new_token() -> str:
        return str(uuid.uuid4())

    def value(self) -> dict:
        raise NotImplementedError


class VerifyEditForm(forms.Form):
    """The proposal's editable fields (its tracked fields but the review status), prefilled."""

    def __init__(self, *args, target_kind: str, current: dict, **kwargs):
        model = VERIFY_TARGETS[target_kind][0]
        editable = [name for name in model.tracked_fields if name != "review_status"]
        super().__init__(*args, initial={name: current.get(name) for name in editable}, **kwargs)
        for name, field in fields_for_model(model, fields=editable, formfield_callback=bounded_formfield).items():
            field.required = False
            if isinstance(field.widget, forms.Textarea):
                field.widget.attrs["rows"] = 3
            self.fields[name] = field

    def edits(self) -> dict:
        """Only the fields the reviewer changed. A field missing from the POST was not shown, so
        it is unchanged — except a checkbox, which browsers leave out when it is unticked."""
        return {
            name: self.cleaned_data[name]
            for name in self.changed_data
            if self.add_prefix(name) in self.data or isinstance(self.fields[name].widget, forms.CheckboxInput)
        }


class VerifyForm(LabelForm):
    decision = forms.ChoiceField(widget=forms.RadioSelect, error_messages={"required": "Pick accept, edit or reject."})
    reason = forms.ChoiceField(required=False, widget=forms.RadioSelect)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, project: dict, target: dict, **kwargs):
        super().__init__(*args, **kwargs)
        label_set = project["label_set"]
        self.fields["decision"].choices = _choices(label_set.get("decision", ()), DECISION_LABELS)
        self.fields["reason"].choices = _choices(label_set.get("reason", ()), REASON_LABELS)
        self.edit_form = VerifyEditForm(
            *args[:1], prefix="edit", target_kind=target["kind"], current=target.get("fields", {}),
        )

    def decision_options(self) -> list[dict]:
        return self.options("decision", DECISION_KEYS)

    def reason_options(self) -> list[dict]:
        return self.options("reason")

    def clean(self):
        data = super().clean()
        if data.get("decision") == "reject" and data.get("reason") == "other" and not data.get("note", "").strip():
            self.add_error("note", "Say what is wrong when the reason is “other”.")
        return data

    def is_valid(self) -> bool:
        valid = super().is_valid()
        if valid and self.cleaned_data["decision"] == "edit":
            if not self.edit_form.is_valid():
                self.add_error(None, "Some edited fields are invalid; see below.")
            elif not self.edit_form.edits():
                self.add_error("decision", "You chose edit but changed nothing: change a field, or accept.")
        return not self.errors

    def value(self) -> dict:
        data = self.cleaned_data
        value = {"decision": data["decision"], "reason": data["reason"], "note": data["note"]}
        if data["decision"] == "edit":
            value["edits"] = self.edit_form.edits()
        return value


class PairwiseForm(LabelForm):
    places_seconds = True  # its template puts ``seconds_taken`` in the decision bar
    choice = forms.ChoiceField(widget=forms.RadioSelect, error_messages={"required": "Pick A, B or tie."})
    reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    # No report ids: the choice names a side of the item, and the server resolves it to the
    # pair's reports (a form field would hand a blind annotator the reports' handles).

    def __init__(self, *args, project: dict, target: dict, **kwargs):
        super().__init__(*args, **kwargs)
        choices = _choices(project["label_set"].get("choice", ()), CHOICE_LABELS)
        self.fields["choice"].choices = choices
        self.dimension_names = list(project["dimensions"])
        for name in self.dimension_names:
            self.fields[f"dim_{name}"] = forms.ChoiceField(
                required=False, choices=choices, widget=forms.RadioSelect, label=_humanize(name)
            )

    def rows(self) -> list[dict]:
        """The overall choice, then one row per dimension; the same keys pick in the active row."""
        rows = [{"label": "Overall", "field": self["choice"], "options": self.options("choice", CHOICE_KEYS)}]
        for name in self.dimension_names:
            bound = self[f"dim_{name}"]
            rows.append({"label": bound.label, "field": bound, "options": self.options(bound.name, CHOICE_KEYS)})
        return rows

    def value(self) -> dict:
        data = self.cleaned_data
        return {
            "choice": data["choice"],
            "dimensions": {name: data[f"dim_{name}"] for name in self.dimension_names if data[f"dim_{name}"]},
            "reason": data["reason"],
            "seconds_taken": data["seconds_taken"],
        }


class AgreementForm(LabelForm):
    label = forms.ChoiceField(required=False, widget=forms.RadioSelect)
    judge_correct = forms.TypedChoiceField(
        required=False, widget=forms.RadioSelect, empty_value=None,
        choices=[("yes", "Judge was right"), ("no", "Judge was wrong")],
        coerce=lambda raw: raw == "yes",
    )
    correction = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What the judge should have said (or the passage that proves it).",
    )
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, project: dict, target: dict, **kwargs):
        super().__init__(*args, **kwargs)
        # The item's own step's labels (``agreement_labels``), not every step's of the project.
        self.fields["label"].choices = _choices(target.get("labels") or project["label_set"].get("label", ()))

    def label_options(self) -> list[dict]:
        return self.options("label")

    def judge_options(self) -> list[dict]:
        return self.options("judge_correct", JUDGE_KEYS)

    def value(self) -> dict:
        data = self.cleaned_data
        return {
            "label": data["label"], "judge_correct": data["judge_correct"], "correction": data["correction"],
            "note": data["note"],
        }


class RatingForm(LabelForm):
    """One number per criterion on the project's scale (typed: digits, Tab to the next
    criterion), and a rationale. The service checks the scale and the criteria again."""

    rationale = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, project: dict, target: dict, **kwargs):
        # Ids of this form's own (its token's): the next item's fields are new elements, so the
        # workspace puts the focus on its first score instead of keeping it on the same id.
        data, initial = (args[0] if args else None) or {}, kwargs.get("initial") or {}
        kwargs.setdefault("auto_id", f"id_{str(data.get('client_token') or initial.get('client_token', ''))[:8]}_%s")
        super().__init__(*args, **kwargs)
        scale = project.get("scale") or {"min": 1, "max": 5}
        self.scale = scale
        self.criteria = list(target.get("criteria") or project.get("criteria") or ())
        whole = float(scale["min"]).is_integer() and float(scale["max"]).is_integer()
        for position, name in enumerate(self.criteria):
            self.fields[f"score_{position}"] = forms.FloatField(
                label=_humanize(name), min_value=scale["min"], max_value=scale["max"],
                widget=forms.NumberInput(attrs={"step": "1" if whole else "any", "min": scale["min"],
                                                "max": scale["max"], "inputmode": "decimal",
                                                "data-score": name, "autocomplete": "off"}),
                error_messages={"required": f"Score {name} from {scale['min']:g} to {scale['max']:g}."},
            )

    def rows(self) -> list[dict]:
        return [{"name": name, "field": self[f"score_{position}"]} for position, name in enumerate(self.criteria)]

    def anchors(self) -> list[tuple[str, str]]:
        return sorted((self.scale.get("anchors") or {}).items(), key=lambda pair: float(pair[0]))

    def value(self) -> dict:
        data = self.cleaned_data
        scores = {}
        for position, name in enumerate(self.criteria):
            score = data[f"score_{position}"]
            scores[name] = int(score) if float(score).is_integer() else score
        return {"scores": scores, "rationale": data["rationale"]}


def label_form_for(context: dict, data=None) -> LabelForm:
    """The label form for an item context (``item_context_for``), bound to ``data`` when given:
    the one the project's kind names (``AnnotationKind.label_form``)."""
    form_class = import_string(kind_of(context["project"]).label_form)
    initial = {"client_token": LabelForm.new_token()}
    return form_class(data, initial=initial, project=context["project"], target=context["target"])


class AdjudicationForm(OptionsMixin, forms.Form):
    """The gold label: one of the labels given (or the judge's), or another value of the label set."""

    pick = forms.ChoiceField(widget=forms.RadioSelect, error_messages={"required": "Pick the gold label."})
    custom = forms.ChoiceField(required=False, widget=forms.RadioSelect)
    reason = forms.ChoiceField(required=False, widget=forms.RadioSelect)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    expected_version = BoundedIntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args, kind: str, label_set: dict, candidates: list[dict], target: dict | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.kind = kind
        self.candidates = {candidate["key"]: candidate for candidate in candidates}
        main = kind_of(kind).main_field
        labels = {**DECISION_LABELS, **CHOICE_LABELS}
        self.fields["pick"].choices = [(c["key"], c["summary"]) for c in candidates] + [("custom", "Something else")]
        # A verify gold label may accept the proposal with the curator's own edit of its fields.
        self.edit_form = None
        if target and target.get("kind") in VERIFY_TARGETS:
            self.edit_form = VerifyEditForm(*args[:1], prefix=f"{self.prefix}-edit" if self.prefix else "edit",
                                            target_kind=target["kind"], current=target.get("fields", {}))
        self.fields["custom"].choices = _choices(
            [v for v in label_set.get(main, ()) if not (v == "edit" and main == "decision" and not self.edit_form)],
            labels,
        )
        self.fields["reason"].choices = _choices(label_set.get("reason", ()), REASON_LABELS)

    def pick_options(self) -> list[dict]:
        return self.options("pick")

    def custom_options(self) -> list[dict]:
        return self.options("custom", [])

    def reason_options(self) -> list[dict]:
        return self.options("reason", [])

    def clean(self):
        data = super().clean()
        if data.get("pick") == "custom" and not data.get("custom"):
            self.add_error("custom", "Pick the gold value.")
        if data.get("pick") == "custom" and data.get("custom") == "edit" and self.edit_form is not None:
            if not self.edit_form.is_valid():
                self.add_error(None, "Some edited fields are invalid; see below.")
            elif not self.edit_form.edits():
                self.add_error("custom", "You chose edit but changed nothing: change a field, or accept.")
        return data

    def value(self) -> dict:
        data = self.cleaned_data
        if data["pick"] != "custom":
            return dict(self.candidates[data["pick"]]["value"])
        if kind_of(self.kind).applies_to_benchmark:
            rejected = data["custom"] == "reject"
            # The curator's note explains a reject for reason "other" (the service requires one).
            value = {"decision": data["custom"], "reason": data["reason"] if rejected else "", "note": data["note"]}
            if data["custom"] == "edit":
                value["edits"] = self.edit_form.edits()
            return value
        return {kind_of(self.kind).main_field: data["custom"]}


_SERVICE_FIELD = re.compile(r"^value\.(?P<field>\w+)(?:\.(?P<sub>[^:]+))?:\s*(?P<message>.*)$", re.S)


def service_error_attach(form: forms.Form, exc: ValueError) -> None:
    """Put a service's ``ValueError`` (``"value.reason: required"``) on the form field it names,
    else on the whole form."""
    message = str(exc)
    match = _SERVICE_FIELD.match(message)
    if match:
        field, sub = match["field"], match["sub"]
        if field == "edits" and sub and isinstance(form, VerifyForm) and sub in form.edit_form.fields:
            form.edit_form.add_error(sub, match["message"])
            form.add_error(None, f"{form.edit_form[sub].label}: {match['message']}")
            return
        if field == "scores" and isinstance(form, RatingForm) and sub in form.criteria:
            form.add_error(f"score_{form.criteria.index(sub)}", match["message"])
            return
        if field == "dimensions" and sub and f"dim_{sub}" in form.fields:
            form.add_error(f"dim_{sub}", match["message"])
            return
        if field in form.fields and field not in form.errors:
            form.add_error(field, match["message"])
            return
    form.add_error(None, message)


# --- Adding a missing item (verify) ------------------------------------------------------------

ADD_DEFAULT_KIND = TargetKind.NUGGET


def _https_urls(model_field, **kwargs):
    if isinstance(model_field, URLField):
        kwargs["assume_scheme"] = "https"  # a URL typed without a scheme (the Django 6 default)
    return bounded_formfield(model_field, **kwargs)


def _has_default(kind: str, name: str) -> bool:
    """Whether the model field behind an add-form field has a default (a gold reference's
    fields are its publication's, but ``important``)."""
    models = (BibEntry, GoldReference) if kind == TargetKind.GOLD_REFERENCE else (VERIFY_TARGETS[kind][0],)
    for model in models:
        try:
            return model._meta.get_field(name).has_default()
        except FieldDoesNotExist:
            continue
    return False


class ProposableAddForm(forms.Form):
    """The fields of the kind being added (``ADD_FIELDS``), typed and labelled from the models;
    the rules (the group belongs to the task, no duplicate reference …) are the service's.
    Changing ``kind`` re-renders the form with that kind's fields."""

    kind = forms.ChoiceField(label="What is missing")

    def __init__(self, *args, kinds: list[str], task, kind: str = "", **kwargs):
        kwargs.setdefault("prefix", "add")
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [(k, TargetKind(k).label) for k in kinds]
        chosen = (self.data.get(self.add_prefix("kind")) if self.is_bound else "") or kind
        if chosen not in kinds:
            chosen = ADD_DEFAULT_KIND if ADD_DEFAULT_KIND in kinds else (kinds[0] if kinds else "")
        self.initial["kind"] = self.chosen = chosen
        for name, field in self._kind_fields(chosen, task).items():
            if name != "group" and _has_default(chosen, name):
                field.required = False  # left empty: the model's default (importance "okay", weight 1 …)
            if isinstance(field.widget, forms.Textarea):
                field.widget.attrs["rows"] = 2
            self.fields[name] = field

    @staticmethod
    def _kind_fields(kind: str, task) -> dict[str, forms.Field]:
        if not kind:
            return {}
        names = ADD_FIELDS[kind]
        if kind == TargetKind.GOLD_REFERENCE:
            fields = fields_for_model(BibEntry, fields=list(BIB_FIELDS), formfield_callback=_https_urls)
            fields.update(fields_for_model(GoldReference, fields=["important"], formfield_callback=bounded_formfield))
            return fields
        model = VERIFY_TARGETS[kind][0]
        fields = fields_for_model(model, fields=[name for name in names if name != "group"],
                                  formfield_callback=bounded_formfield)
        if kind == TargetKind.CHECKLIST_ITEM:
            group = IdChoiceField(
                queryset=task.checklist_groups.order_by("position", "pk"), label="Checklist group",
                empty_label=None,
            )
            fields = {"group": group, **fields}
        return fields

    def value(self) -> tuple[str, dict]:
        """``(kind, fields)`` for ``proposable_add``."""
        data = dict(self.cleaned_data)
        kind = data.pop("kind")
        if "group" in data:
            data["group"] = data["group"].pk
        return kind, {name: value for name, value in data.items() if value not in (None, "")}


_ADD_FIELD = re.compile(r"^(?:fields\.)?(?P<field>\w+):\s*(?P<message>.*)$", re.S)


def add_error_attach(form: ProposableAddForm, exc: ValueError) -> None:
    """Put ``proposable_add``'s ``ValueError`` (``"fields.text: …"``, ``"kind: …"``) on its field."""
    match = _ADD_FIELD.match(str(exc))
    if match and match["field"] in form.fields and match["field"] not in form.errors:
        form.add_error(match["field"], match["message"])
    else:
        form.add_error(None, match["message"] if match else str(exc))
