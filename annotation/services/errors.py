"""Errors the annotation services raise; each message says what happened and what to do.

Besides these: ``PermissionError`` when the user's role does not allow the action, and
``ValueError`` (naming the offending field) when an input is invalid.
"""


from core.errors import ConflictError


class AnnotationError(ConflictError):
    """Base of the workspace's refusals."""


class ProjectNotOpenError(AnnotationError):
    """The project is paused or closed: nothing is handed out or accepted."""


class ItemNotOpenError(AnnotationError):
    """The item already has all its labels (or was adjudicated)."""


class AlreadyLabelledError(AnnotationError):
    """The annotator already labelled this item with a different form submission."""


class ClaimLostError(AnnotationError):
    """The annotator's claim expired and every slot of the item is taken by others."""


class ReviewConflictError(AnnotationError):
    """A decision could not be applied to the benchmark row (it changed meanwhile, or is invalid)."""


class UndoRefusedError(AnnotationError):
    """Something already depends on the action (adjudicated, edited since, frozen task set)."""
