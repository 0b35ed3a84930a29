from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from benchmark.views import task_page_panel_register
        from scoring.views_runs import run_page_panel_register

        from . import hooks
        from .calibration.views import calibration_panel
        from .views.task_review import curation_panel

        hooks.connect()
        from .crowd.selectors import claim_plan
        from .loop.claims import claim_planner_register

        claim_planner_register(claim_plan)  # a crowd study's quota and attention checks
        task_page_panel_register(curation_panel)  # the task page's curation card and solo review
        run_page_panel_register(calibration_panel)  # the run page's "Calibrated scores" card
