"""The form of the new-run page: it offers what fits the chosen protocol and turns POST data into
``run_create`` arguments. The business rules stay in ``run_create``; the errors it raises come
back through ``attach_service_error`` onto the field they are about."""

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef

from benchmark.forms import SystemsField
from benchmark.models import Protocol, Report, System, Task, TaskSet
from core.bounded import IdChoiceField, IdMultipleChoiceField, bounded_formfield

from .judges import endpoints
from .models import JudgeConfig
from .pipelines import PIPELINES
from .selectors import reports_missing


def runnable_protocols() -> list[tuple[str, str]]:
    """The protocols that have an evaluation pipeline, in the order of ``Protocol``."""
    registered = set(PIPELINES)  # the registry's names; ``in PIPELINES`` would import every pipeline
    return [(value, label) for value, label in Protocol.choices if value in registered]


class JudgeChoiceField(IdChoiceField):
    def label_from_instance(self, obj: JudgeConfig) -> str:
        return str(obj)  # names the backend and ends in "[heuristic]" for the offline judge


class TaskChoiceField(IdMultipleChoiceField):
    def label_from_instance(self, obj: Task) -> str:
        return f"{obj.key} — {(obj.title or obj.survey.title)[:90]}"


class RunCreateForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="optional")
    protocol = forms.ChoiceField(choices=runnable_protocols)
    judge_config = JudgeChoiceField(
        queryset=JudgeConfig.objects.order_by("name"), label="Judge configuration",
        empty_label="— choose a judge —",
    )
    task_set = IdChoiceField(
        queryset=TaskSet.objects.none(), required=False, empty_label="— or choose tasks below —",
        error_messages={"invalid_choice": "this task set has no task of the chosen protocol"},
    )
    tasks = TaskChoiceField(
        queryset=Task.objects.none(), required=False, widget=forms.CheckboxSelectMultiple,
        error_messages={"invalid_choice": "task %(value)s is not a task of the chosen protocol"},
    )
    systems = SystemsField(
        queryset=System.objects.none(), widget=forms.CheckboxSelectMultiple,
        error_messages={
            "required": "choose at least one system to evaluate",
            "invalid_choice": "system %(value)s has no report on a task of the chosen protocol",
        },
    )

    def __init__(self, *args, protocol: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.missing: list[tuple[str, list[str]]] = []
        self.duplicate = None  # the same run, once run_create named it
        known = dict(runnable_protocols())
        chosen = self.data.get("protocol") if self.is_bound else protocol
        self.chosen_protocol = chosen if chosen in known else next(iter(known), "")
        self.fields["protocol"].initial = self.chosen_protocol
        of_protocol = Task.objects.filter(protocol=self.chosen_protocol)
        self.fields["tasks"].queryset = of_protocol.select_related("survey").order_by("key")
        self.fields["task_set"].queryset = TaskSet.objects.filter(
            Exists(TaskSet.tasks.through.objects.filter(taskset_id=OuterRef("pk"), task__protocol=self.chosen_protocol))
        ).order_by("name", "-version")
        self.fields["systems"].queryset = System.objects.filter(
            Exists(Report.objects.filter(system=OuterRef("pk"), task__protocol=self.chosen_protocol))
        ).order_by("name", "version")

    accept_missing = forms.BooleanField(
        required=False, label="Evaluate only the reports there are",
        help_text="some chosen systems wrote no report on some tasks; tick to run without them",
    )

    force = forms.BooleanField(
        required=False, label="Start another run anyway",
        help_text="the same judge configuration, systems and tasks were already evaluated (the run is named above)",
    )

    def clean(self):
        data = super().clean()
        has_set, has_tasks = bool(data.get("task_set")), bool(data.get("tasks"))
        if has_set and has_tasks:
            self.add_error("task_set", "choose either a task set or tasks, not both")
        elif not has_set and not has_tasks and "task_set" not in self.errors and "tasks" not in self.errors:
            self.add_error("task_set", "choose a task set or at least one task")
        elif data.get("systems") and not self.errors:
            tasks = list(data["task_set"].tasks.filter(protocol=self.chosen_protocol)) if has_set else list(data["tasks"])
            self.missing = reports_missing(tasks=tasks, systems=data["systems"])
            absent = sum(len(systems) for _, systems in self.missing)
            if absent == len(tasks) * len(data["systems"]):
                self.missing = []  # no report at all: run_create refuses, naming the systems
            elif self.missing and not data.get("accept_missing"):
                tasks_lack = "1 task lacks" if len(self.missing) == 1 else f"{len(self.missing)} tasks lack"
                self.add_error("accept_missing", f"{tasks_lack} reports of some chosen systems (listed below); tick "
                               "to evaluate only the reports there are, or choose other systems or tasks")
        return data

    def service_arguments(self) -> dict:
        """Keyword arguments for ``run_create`` (without ``actor``)."""
        data = self.cleaned_data
        return {
            "name": data["name"], "protocol": data["protocol"], "judge_config": data["judge_config"],
            "systems": list(data["systems"]), "task_set": data["task_set"],
            "tasks": None if data["task_set"] else list(data["tasks"]), "force": data.get("force", False),
        }

    def attach_service_error(self, exc: ValidationError) -> None:
        """Put ``run_create``'s refusal on the field it is about (its messages name a system or
        task problem), else on the whole form."""
        self.duplicate = getattr(exc, "run", None)
        if self.duplicate is not None:  # the form then offers "force" (scoring/run_new.html)
            self.add_error("force", exc.messages[0])
            return
        for message in exc.messages:
            self.add_error(self._field_for(message), message)

    def _field_for(self, message: str) -> str | None:
        if "system" in message:
            return "systems"
        if "task" in message:
            return "task_set" if self.cleaned_data.get("task_set") else "tasks"
        return None


class JudgeConfigForm(forms.ModelForm):
    """Type coercion for ``judge_config_create`` / ``judge_config_update`` (never ``save()``: the
    services hold the rules and write the revision row). The endpoint is one the deployment
    allows; the key it gets is bound to it in the settings, never entered here."""

    base_url = forms.ChoiceField(
        label="Endpoint", required=False,
        help_text="The endpoints this deployment allows. Each one's key is set on the server "
                  "(OPENAI_API_KEY for the default, JUDGE_ENDPOINTS for the others) and goes to that endpoint only.",
    )

    class Meta:
        model = JudgeConfig
        fields = ["name", "backend", "model", "base_url", "temperature", "prompt_version", "repeats",
                  "max_concurrency", "timeout_seconds", "max_retries", "price_input_per_million",
                  "price_output_per_million", "batch", "batch_discount", "embedding_backend"]
        formfield_callback = bounded_formfield  # whole numbers within their column; the model's validators say the rest

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        default = endpoints.default_url()
        others = [url for url in endpoints.allowed_urls() if url != default]
        self.fields["base_url"].choices = [("", f"default: {default}"), *((url, url) for url in others)]
        self.fields["batch_discount"].required = False  # left empty: the configuration's (0.5 when new)

    def clean_batch_discount(self):
        value = self.cleaned_data.get("batch_discount")
        return self.instance.batch_discount if value is None else value

    def validate_unique(self) -> None:  # the service names a taken name on the name field
        pass

    def service_arguments(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.Meta.fields}

    def attach_service_error(self, exc: ValueError) -> None:
        field, _, why = str(exc).partition(": ")
        self.add_error(field if why and field in self.fields else None, why or str(exc))
