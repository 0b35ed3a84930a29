"""Models every app needs: the timestamp base, the background-job base and worker heartbeats, the
webhook-delivery base, people with their global role, the audit trail."""

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class TimeStamped(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Job(TimeStamped):
    """A background job a Celery worker claims (``core.jobs.job_claim``) and recovery puts back in
    the queue when its worker died (``core.jobs.jobs_recover``). Each kind has its own ``status``
    field; ``queued_status`` is the value a job waits in, ``running_status`` the value of a claimed one."""

    queued_status: str
    running_status: str

    worker = models.CharField(max_length=200, blank=True, help_text="the Celery worker running it; empty in a command")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class WorkerHeartbeat(models.Model):
    """A live Celery worker. Workers refresh their row every few seconds; see ``core.workers``."""

    hostname = models.CharField(max_length=255, unique=True)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "scoring_workerheartbeat"  # moved from scoring with its rows

    def __str__(self) -> str:
        return self.hostname


class WebhookDeliveryBase(models.Model):
    """One event POSTed to one receiver (``core.webhooks``): pending until a 2xx answer (delivered)
    or the last attempt (failed). An app subclasses it with the subscription the receiver comes
    from and says where it goes (``receiver``)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    event = models.CharField(max_length=40)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def receiver(self) -> tuple[str, str, bool]:
        """(URL, signing secret, whether the subscription is still active)."""
        raise NotImplementedError


class Role(models.TextChoices):
    CURATOR = "curator", "Curator"
    ANNOTATOR = "annotator", "Annotator"
    VIEWER = "viewer", "Viewer"


class AnnotatorProfile(TimeStamped):
    """A person's global role. Their disciplines are ``benchmark.Discipline.annotators`` (reached
    here as ``profile.disciplines``): the many-to-many is declared on the benchmark side so that
    core depends on no app."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    qualification = models.JSONField(default=list, blank=True, help_text="answers to qualification questions")
    external_id = models.CharField(max_length=200, blank=True, help_text="annotator id in an imported dataset")

    class Meta:
        db_table = "annotation_annotatorprofile"  # moved from annotation with its rows

    def __str__(self) -> str:
        return f"{self.user} ({self.role})"


class AuditLog(models.Model):
    """The one audit trail, in the shape of Zulip's ``RealmAuditLog``: one row per write, made in
    the write's transaction (``core.audit.audit_log_record``). Who (``actor``, or ``actor_label``
    when no user acted: an import, a model), what (``action``), to which row (``content_type`` +
    ``object_id``), in which annotation project if any (``project_id``: a plain id, as core
    depends on no app), the tracked fields before and after, and a note."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True, help_text="set when no user acted (import, model)")
    action = models.CharField(max_length=50, db_index=True)
    content_type = models.ForeignKey(ContentType, null=True, blank=True, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField(null=True, blank=True)
    target = GenericForeignKey("content_type", "object_id")
    project_id = models.BigIntegerField(
        null=True, blank=True, db_index=True, help_text="the annotation project the action belongs to"
    )
    before = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    after = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    note = models.TextField(blank=True)
    # A default, not auto_now_add: imported and carried-over rows keep their own time.
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["content_type", "object_id", "created_at"], name="core_auditl_content_0c8e1f_idx"),
            models.Index(fields=["project_id", "created_at"], name="core_auditl_project_5b0a7d_idx"),
        ]

    @property
    def target_id(self) -> int | None:
        """The workspace's word for ``object_id`` (its views show the item an undone row names)."""
        return self.object_id

    def __str__(self) -> str:
        who = self.actor or self.actor_label or "system"
        kind = self.content_type.model if self.content_type_id else "-"
        return f"{self.action} {kind}#{self.object_id} by {who}"
