"""Forms of the benchmark pages: the task picker's filters and the new-task-set form. Type
coercion only; the rules live in the services (``benchmark.services.tasksets``)."""

from django import forms

from core.bounded import IdChoiceField, IdMultipleChoiceField

from .models import Discipline, Protocol, Task
from .selectors import task_list

TASKS_SHOWN = 500  # a task picker lists at most this many matches; narrow the filters for more


class SystemsField(IdMultipleChoiceField):
    """Systems to tick, each named for people (``System.label``), its identifier in the value."""

    def label_from_instance(self, obj) -> str:
        return obj.label


class TaskFilterForm(forms.Form):
    """A task picker's filters: a GET form above the form that picks, which keeps them in its URL."""

    protocol = forms.ChoiceField(choices=[("", "any protocol"), *Protocol.choices], required=False)
    discipline = IdChoiceField(queryset=Discipline.objects.order_by("name"), required=False,
                                        empty_label="any discipline")
    status = forms.ChoiceField(choices=[("", "any status"), *Task.Status.choices], required=False,
                               label="Task status")
    search = forms.CharField(required=False, label="Search", help_text="key or title")

    def matching(self):
        """Tasks matching the valid filters (an invalid one is ignored and shown as an error)."""
        data = self.cleaned_data if self.is_valid() else {}
        discipline = data.get("discipline")
        return task_list(protocol=data.get("protocol", ""), status=data.get("status", ""),
                         query=data.get("search", ""), discipline=discipline.pk if discipline else None)

    @property
    def is_filtering(self) -> bool:
        return self.is_valid() and any(self.cleaned_data.values())


def task_choices(field: forms.ModelMultipleChoiceField, matching) -> None:
    """Offer the first ``TASKS_SHOWN`` tasks of ``matching`` in a task picker, labelled protocol/key — title."""
    field.queryset = Task.objects.filter(pk__in=matching.values("pk")[:TASKS_SHOWN]).select_related(
        "survey").order_by("protocol", "key")
    field.label_from_instance = lambda task: f"{task.protocol}/{task.key} — {task.title or task.survey.title}"


class TaskPickerForm(forms.Form):
    """A form whose ``tasks`` field offers what a ``TaskFilterForm`` matches (``task_choices``); it
    keeps the filter, the matching tasks and their count, which its page shows."""

    def __init__(self, *args, task_filter: TaskFilterForm, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.task_filter = task_filter
        self.matching = task_filter.matching()
        self.matching_count = self.matching.count()
        task_choices(self.fields["tasks"], self.matching)


class TaskSetCreateForm(TaskPickerForm):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    tasks = IdMultipleChoiceField(
        queryset=Task.objects.none(), required=False, widget=forms.CheckboxSelectMultiple,
        help_text="tick tasks, or tick none to take every task the filters match",
    )

    def clean(self):
        data = super().clean()
        if not data.get("tasks") and not self.task_filter.is_filtering and "tasks" not in self.errors:
            self.add_error("tasks", "tick tasks, or filter the tasks above to take all that match")
        return data

    def chosen_tasks(self) -> list[Task]:
        return list(self.cleaned_data["tasks"]) or list(self.matching)


class ImportForm(forms.Form):
    format = forms.ChoiceField(help_text="how to read the file")
    file = forms.FileField(help_text="one file, or a .zip of a folder (ReportBench with its _GT folder, "
                                     "DeepScholar, SurveyLens, markdown reports)")

    def __init__(self, *args, **kwargs) -> None:
        from .importers.catalogue import IMPORTERS

        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(name, f"{name} — {importer.description}")
                                         for name, importer in IMPORTERS.items()]
