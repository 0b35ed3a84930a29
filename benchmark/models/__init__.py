from .base import Origin, Proposable, ReviewStatus, SETTLED_STATUSES, TimeStamped
from .imports import ImportJob
from .reports import Report, System, SystemAlias, system_key
from .surveys import BibEntry, Discipline, Survey, SurveyCitation
from .tasks import (
    ChecklistGroup,
    ChecklistItem,
    ConstraintQuestion,
    GoldReference,
    Nugget,
    Protocol,
    RubricCriterion,
    Task,
    TaskPrompt,
)
from .tasksets import TaskSet

PROPOSABLE_MODELS = (TaskPrompt, ConstraintQuestion, ChecklistGroup, ChecklistItem, GoldReference, Nugget, RubricCriterion)

__all__ = [
    "BibEntry", "ChecklistGroup", "ChecklistItem", "ConstraintQuestion", "Discipline", "GoldReference",
    "ImportJob", "Nugget", "Origin", "PROPOSABLE_MODELS", "Proposable", "Protocol", "Report", "ReviewStatus",
    "RubricCriterion", "SETTLED_STATUSES", "Survey", "SurveyCitation", "System", "SystemAlias", "Task", "TaskPrompt",
    "TaskSet", "TimeStamped", "system_key",
]
