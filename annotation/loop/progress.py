"""The workspace's progress line, which every request of the loop shows (label + next
included): the user's own counts read by ``store.own_counts``, the project's totals cached."""

from ..models import AnnotationProject
from ..selectors.progress import project_item_totals
from . import store


def own_progress(*, project: AnnotationProject, user) -> dict:
    """The user's own labels and skips in the project (``mine``, exact) and the project's
    ``project_item_totals``."""
    labels, skips = store.own_counts(project_id=project.pk, user_id=user.pk)
    return {"mine": {"labels": labels, "skips": skips}, **project_item_totals(project=project)}
