"""People's judgments: annotator profiles, pairwise preferences, and the annotation workspace.

Split by concept (``people``, ``preferences``, ``workspace``); every model and constant is
re-exported here, so ``from annotation.models import X`` keeps working and Django finds the
models under the ``annotation`` app as before (no migration change).
"""

from core.models import AnnotatorProfile, Role  # re-exported: the workspace's roles are the global ones
from .exports import ExportJob
from .invitations import INVITATION_OPEN, Invitation, InvitationStatus
from .preferences import PairwisePreference
from .statistics import CalibratedScores, ProjectStatistics
from .webhooks import Webhook, WebhookDelivery, WebhookEvent  # noqa: F401 (re-exported)
from .workspace import (
    DEFAULT_HOLD,
    DEFAULT_UNIFORM_SHARE,
    VERIFY_TARGETS,
    AnnotationItem,
    AnnotationProject,
    Assignment,
    GoldLabel,
    Label,
    ProjectMembership,
    ReportPair,
    TargetKind,
)
from ..crowd.models import AttentionCheck, CrowdStudy, CrowdWorker  # noqa: E402,F401 (models of annotation.crowd)
from ..comments.models import CommentNotification, ItemComment  # noqa: E402,F401 (models of annotation.comments)

__all__ = [
    "DEFAULT_HOLD",
    "DEFAULT_UNIFORM_SHARE",
    "ExportJob",
    "VERIFY_TARGETS",
    "AnnotationItem",
    "AnnotationProject",
    "AnnotatorProfile",
    "Assignment",
    "GoldLabel",
    "INVITATION_OPEN",
    "Invitation",
    "InvitationStatus",
    "Label",
    "PairwisePreference",
    "ProjectMembership",
    "CalibratedScores",
    "ProjectStatistics",
    "ReportPair",
    "Role",
    "TargetKind",
]
