"""What a project would be before it is made."""

from django.db import transaction

from ..blind import blind_overlap_warnings
from ..calibration.unit_groups import GROUP_METRICS, drawn_units
from ..label_help import label_help
from .adaptive_pairs import adaptive_pairs_budget_clean
from .projects import project_create


class _Discard(Exception):
    """Raised to roll the trial project back."""


def project_preview(**arguments) -> dict:
    """What ``project_create(**arguments)`` would make: ``items``, ``tasks`` and the filled-in
    ``label_set``, and the ``warnings`` of ``blind_overlap_warnings``. The project is really
    created and then rolled back, so the preview counts with
    exactly the rules and refusals of the creation (a ``ValueError`` naming the field, or
    ``PermissionError``) and can never drift from it; nothing, audit rows included, is kept."""
    preview: dict = {}
    try:
        with transaction.atomic():
            project = project_create(**arguments)
            preview = {"items": project.items.count(), "tasks": project.tasks.count(),
                       "label_set": project.label_set, "overlap": project.overlap,
                       "warnings": blind_overlap_warnings(project),
                       # what each label means, as the workspace will say it (editable once made)
                       "label_help": label_help(labels=_main_labels(project),
                                                step=project.steps[0] if len(project.steps or []) == 1 else "")}
            if project.sampling_unit in GROUP_METRICS and project.sampling != project.Sampling.ALL:
                # a sample by unit: its size counts units, each holding several verdicts (items)
                preview["units"] = drawn_units(project)
                preview["units_name"] = GROUP_METRICS[project.sampling_unit].units_name
            if project.pair_choice == project.PairChoice.ADAPTIVE:  # the first pairs; more as labels come
                preview["pairs_budget"] = adaptive_pairs_budget_clean(project=project)
            raise _Discard
    except _Discard:
        pass
    return preview


def _main_labels(project) -> list[str]:
    main = {"verify": "decision", "pairwise": "choice", "agreement": "label"}.get(project.kind, "label")
    return list((project.label_set or {}).get(main, []))
