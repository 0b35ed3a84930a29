"""The curator's form of a crowd study (``/annotate/<id>/crowd/``)."""

from django import forms

from core.bounded import BoundedIntegerField

PLATFORMS = {  # the query parameters each platform appends to the entry link
    "prolific": ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    "mturk": ("workerId", "hitId", "assignmentId"),
}


class CrowdStudyForm(forms.Form):
    open = forms.BooleanField(required=False, initial=True, label="The entry link admits workers")
    platform = forms.ChoiceField(choices=[("prolific", "Prolific (PROLIFIC_PID, STUDY_ID, SESSION_ID)"),
                                          ("mturk", "MTurk-style (workerId, hitId, assignmentId)"),
                                          ("custom", "Other: name the parameters below")], initial="prolific")
    worker_param = forms.CharField(max_length=40, required=False, label="Worker id parameter (other platforms)")
    study_param = forms.CharField(max_length=40, required=False, label="Study id parameter (other platforms)")
    session_param = forms.CharField(max_length=40, required=False, label="Session id parameter (other platforms)")
    quota = BoundedIntegerField(min_value=1, max_value=10000, initial=10, label="Items per worker",
                                help_text="attention checks included")
    check_rate = forms.FloatField(min_value=0, max_value=0.99, initial=0.1, label="Share of attention checks",
                                  help_text="0 to 0.99 of each worker's items; mark checks with a known answer through"
                                            " the API (attention-checks)")
    max_failures = BoundedIntegerField(min_value=1, max_value=1000, initial=1, label="Flag a worker after this many"
                                                                                      " failed checks")
    completion_code = forms.CharField(max_length=40, label="Completion code")
    completion_url = forms.URLField(required=False, max_length=200, label="Completion URL", assume_scheme="https",
                                    help_text="where a finished worker is sent; {code} is replaced by the code")

    def study_fields(self) -> dict:
        data = dict(self.cleaned_data)
        platform = data.pop("platform")
        if platform in PLATFORMS:
            data["worker_param"], data["study_param"], data["session_param"] = PLATFORMS[platform]
        return data

    def clean(self):
        data = super().clean()
        if data.get("platform") == "custom":
            for name in ("worker_param", "study_param", "session_param"):
                if not data.get(name):
                    self.add_error(name, "Name the platform's parameter.")
        return data

    @classmethod
    def initial_of(cls, study) -> dict:
        if study is None:
            return {}
        names = (study.worker_param, study.study_param, study.session_param)
        platform = next((key for key, value in PLATFORMS.items() if value == names), "custom")
        return {"open": study.open, "platform": platform, "worker_param": study.worker_param,
                "study_param": study.study_param, "session_param": study.session_param, "quota": study.quota,
                "check_rate": study.check_rate, "max_failures": study.max_failures,
                "completion_code": study.completion_code, "completion_url": study.completion_url}
