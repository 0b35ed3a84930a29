"""What an audit row says was done (``AuditLog.action``): one member per action, spelt
``<entity>.<verb>`` in lower snake case. ``core.audit`` writes only members, so a new action is
a new line here (and nothing else: the column is free text for the database, no migration).

Rows written before the enumeration keep working: migration ``core.0005`` rewrote their
spellings, and ``AuditAction.parse`` still reads the old ones (``LEGACY_SPELLINGS``), as in
history entries of native exports made before."""

from django.db import models


class AuditAction(models.TextChoices):
    # accounts and API tokens
    ACCOUNT_CREATE = "account.create", "account created"
    ACCOUNT_INVITE = "account.invite", "account invited"
    ACCOUNT_SSO_CREATE = "account.sso_create", "account created at a first sign-in with the identity provider"
    # invitations by e-mail (``annotation.Invitation``)
    INVITATION_CREATE = "invitation.create", "invitation made"
    INVITATION_SEND = "invitation.send", "invitation e-mail sent"
    INVITATION_SEND_FAIL = "invitation.send_fail", "invitation e-mail not delivered"
    INVITATION_RESEND = "invitation.resend", "invitation link renewed"
    INVITATION_OPEN = "invitation.open", "invitation link opened"
    INVITATION_JOIN = "invitation.join", "joined by invitation"
    INVITATION_REVOKE = "invitation.revoke", "invitation revoked"
    API_TOKEN_ISSUE = "api_token.issue", "API token issued"
    API_TOKEN_ROTATE = "api_token.rotate", "API token rotated"
    API_TOKEN_REVOKE = "api_token.revoke", "API token revoked"
    # the benchmark: systems, task sets, survey texts
    SYSTEM_CREATE = "system.create", "system created"
    SYSTEM_DISPLAY_NAME = "system.display_name", "system display name set"
    ALIAS_SET = "alias.set", "system alias set"
    ALIAS_DELETE = "alias.delete", "system alias deleted"
    TASKSET_CREATE = "taskset.create", "task set created"
    TASKSET_UPDATE = "taskset.update", "task set updated"
    TASKSET_FREEZE = "taskset.freeze", "task set frozen"
    TASKSET_NEW_VERSION = "taskset.new_version", "task set version made"
    SURVEY_TEXT = "survey.text", "survey text set"
    # a benchmark row under review (a ``Proposable``): how it came and changed
    PROPOSABLE_ADD = "proposable.add", "added as missing by an annotator"
    PROPOSABLE_EDIT = "proposable.edit", "edited"
    PROPOSABLE_PROPOSE = "proposable.propose", "proposed by a model"
    PROPOSABLE_REVISE = "proposable.revise", "revised by a model"
    IMPORT_UPDATE = "import.update", "updated by an import"
    IMPORT_REMOVE = "import.remove", "removed by an import"
    # its review (``review.<ReviewStatus>``: ``AuditAction(f"review.{status}")``)
    REVIEW_PROPOSED = "review.proposed", "review: back to proposed"
    REVIEW_ACCEPTED = "review.accepted", "review: accepted"
    REVIEW_EDITED = "review.edited", "review: edited and accepted"
    REVIEW_REJECTED = "review.rejected", "review: rejected"
    REVIEW_UNDO = "review.undo", "review undone"
    # scoring
    JUDGE_CONFIG_CREATE = "judge_config.create", "judge configuration created"
    JUDGE_CONFIG_UPDATE = "judge_config.update", "judge configuration updated"
    # annotation projects and their members
    PROJECT_CREATE = "project.create", "project created"
    PROJECT_UPDATE = "project.update", "project updated"
    PROJECT_POPULATE = "project.populate", "project populated"
    PROJECT_IMPORT_PREFERENCES = "project.import_preferences", "project made from imported preferences"
    PROJECT_PAIRS_ADD = "project.pairs_add", "adaptive pairs added"
    MEMBERSHIP_SET = "membership.set", "member role set"
    MEMBERSHIP_REMOVE = "membership.remove", "member removed"
    GUIDELINES_SEEN = "guidelines.seen", "guidelines seen"
    # the annotator loop
    ASSIGNMENT_CLAIM = "assignment.claim", "item claimed"
    ASSIGNMENT_SKIP = "assignment.skip", "item skipped"
    ASSIGNMENT_SKIP_UNDO = "assignment.skip_undo", "skip undone"
    ASSIGNMENT_RELEASE = "assignment.release", "claim released"
    ASSIGNMENT_REVISIT_SKIPPED = "assignment.revisit_skipped", "skipped items reopened"
    LABEL_SUBMIT = "label.submit", "label submitted"
    LABEL_UNDO = "label.undo", "label undone"
    ITEM_ADJUDICATE = "item.adjudicate", "item adjudicated"
    ITEM_REOPEN = "item.reopen", "item reopened for one more label"
    TASK_REVIEW_START = "task.review_start", "task review started"
    TASK_CURATE = "task.curate", "task curated"
    TASK_UNCURATE = "task.uncurate", "task curation undone"

    @classmethod
    def parse(cls, spelling: str) -> "AuditAction":
        """The member a stored or exported spelling names, old spellings included; ``ValueError``
        naming the known ones for anything else."""
        if spelling in LEGACY_SPELLINGS:
            return LEGACY_SPELLINGS[spelling]
        try:
            return cls(spelling)
        except ValueError:
            raise ValueError(f"unknown audit action {spelling!r}; known: {', '.join(cls.values)}") from None


# Spellings before the enumeration (``entity:verb`` and bare words) → their member. The data
# migration that rewrote stored rows keeps its own frozen copy of this map.
LEGACY_SPELLINGS: dict[str, AuditAction] = {
    "api_token:issue": AuditAction.API_TOKEN_ISSUE,
    "api_token:rotate": AuditAction.API_TOKEN_ROTATE,
    "api_token:revoke": AuditAction.API_TOKEN_REVOKE,
    "system:create": AuditAction.SYSTEM_CREATE,
    "system:display_name": AuditAction.SYSTEM_DISPLAY_NAME,
    "alias:set": AuditAction.ALIAS_SET,
    "alias:delete": AuditAction.ALIAS_DELETE,
    "taskset:create": AuditAction.TASKSET_CREATE,
    "taskset:update": AuditAction.TASKSET_UPDATE,
    "taskset:freeze": AuditAction.TASKSET_FREEZE,
    "taskset:new_version": AuditAction.TASKSET_NEW_VERSION,
    "survey_text": AuditAction.SURVEY_TEXT,
    "add": AuditAction.PROPOSABLE_ADD,
    "edit": AuditAction.PROPOSABLE_EDIT,
    "propose": AuditAction.PROPOSABLE_PROPOSE,
    "propose:revise": AuditAction.PROPOSABLE_REVISE,
    "import": AuditAction.IMPORT_UPDATE,
    "import:update": AuditAction.IMPORT_UPDATE,
    "import:remove": AuditAction.IMPORT_REMOVE,
    "import:delete": AuditAction.IMPORT_REMOVE,
    "review:proposed": AuditAction.REVIEW_PROPOSED,
    "review:accepted": AuditAction.REVIEW_ACCEPTED,
    "review:edited": AuditAction.REVIEW_EDITED,
    "review:rejected": AuditAction.REVIEW_REJECTED,
    "review:undo": AuditAction.REVIEW_UNDO,
    "judge_config:create": AuditAction.JUDGE_CONFIG_CREATE,
    "judge_config:update": AuditAction.JUDGE_CONFIG_UPDATE,
}
