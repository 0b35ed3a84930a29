from django.contrib import admin

from . import models
from .comments.models import CommentNotification, ItemComment
from .crowd.models import AttentionCheck, CrowdStudy, CrowdWorker


@admin.register(models.PairwisePreference)
class PairwisePreferenceAdmin(admin.ModelAdmin):
    list_display = ("task", "annotator", "report_left", "report_right", "choice", "component", "labeled_at")
    list_filter = ("choice", "component", "source")
    search_fields = ("task__key", "annotator__username", "reason")
    raw_id_fields = ("task", "report_left", "report_right", "project", "label")


# --- The annotation workspace: read-only here. Changes go through annotation.services, which
# keep the counters consistent and write the audit rows; an admin edit would do neither.


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MembershipInline(admin.TabularInline):
    model = models.ProjectMembership
    extra = 0
    raw_id_fields = ("user",)
    has_add_permission = ReadOnlyAdmin.has_add_permission
    has_change_permission = ReadOnlyAdmin.has_change_permission
    has_delete_permission = ReadOnlyAdmin.has_delete_permission


@admin.register(models.AnnotationProject)
class AnnotationProjectAdmin(ReadOnlyAdmin):
    list_display = ("name", "kind", "status", "overlap", "blind", "created_by", "created_at")
    list_filter = ("kind", "status", "blind")
    search_fields = ("name", "description")
    exclude = ("seed",)  # a blind project's seed is secret (``annotation.blind.secret_seed``)
    inlines = [MembershipInline]


@admin.register(models.AnnotationItem)
class AnnotationItemAdmin(ReadOnlyAdmin):
    list_display = (
        "project", "target_kind", "target_id", "position", "labels_done", "labels_needed", "status", "disagreement",
    )
    list_filter = ("status", "disagreement", "target_kind", "project")
    list_select_related = ("project",)
    search_fields = ("project__name", "target_kind")


@admin.register(models.Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ("item", "user", "status", "claimed_at", "expires_at", "ended_at")
    list_filter = ("status", "project")
    list_select_related = ("item", "user")
    search_fields = ("user__username",)


@admin.register(models.Label)
class LabelAdmin(ReadOnlyAdmin):
    list_display = ("item", "annotator", "created_at")
    list_filter = ("project",)
    list_select_related = ("item", "annotator")
    search_fields = ("annotator__username",)


@admin.register(models.GoldLabel)
class GoldLabelAdmin(ReadOnlyAdmin):
    list_display = ("item", "decided_by", "decided_at")
    list_filter = ("item__project", "decided_at")
    list_select_related = ("item", "decided_by")
    search_fields = ("decided_by__username", "note")


@admin.register(models.ProjectMembership)
class ProjectMembershipAdmin(ReadOnlyAdmin):
    list_display = ("project", "user", "role")
    list_filter = ("role", "project")
    search_fields = ("user__username", "project__name")


@admin.register(models.ProjectStatistics)
class ProjectStatisticsAdmin(ReadOnlyAdmin):
    """Derived figures (``annotation.dashboards.inter_annotator``): read here, recomputed from the labels."""

    list_display = ("project", "kind", "version", "computed_at", "seconds", "requested_at")
    list_filter = ("kind", "project")
    list_select_related = ("project",)
    search_fields = ("project__name", "version")


@admin.register(models.ReportPair)
class ReportPairAdmin(ReadOnlyAdmin):
    list_display = ("project", "task", "report_left", "report_right", "leg", "round")
    list_filter = ("leg", "project")
    search_fields = ("task__key", "project__name")


# --- Webhooks: subscriptions are configuration (editable); deliveries are a read-only log.


@admin.register(models.Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ("url", "project", "events", "active", "created_at")
    list_filter = ("active", "project")
    list_select_related = ("project",)
    search_fields = ("url", "project__name")
    raw_id_fields = ("project",)


@admin.register(models.WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("id", "event", "webhook", "status", "attempts", "response_code", "created_at", "delivered_at")
    list_filter = ("status", "event", "webhook__project")
    list_select_related = ("webhook",)
    search_fields = ("webhook__url", "event", "last_error")


@admin.register(models.ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ("created_at", "kind", "status", "requested_by", "progress_done", "progress_total", "filename")
    list_filter = ("kind", "status")
    search_fields = ("filename", "requested_by__username", "error")
    readonly_fields = [f.name for f in models.ExportJob._meta.fields]  # jobs change only through their worker


# --- Derived figures, onboarding, crowd studies and discussion: read here, written by their services
# (each with its audit row), so the admin changes none of them.


@admin.register(models.CalibratedScores)
class CalibratedScoresAdmin(ReadOnlyAdmin):
    """Calibrated scores a worker stored (``annotation.calibration.stored``)."""

    list_display = ("project", "run", "version", "computed_at", "seconds", "requested_at")
    list_filter = ("project",)
    list_select_related = ("project", "run")
    search_fields = ("project__name", "version")
    exclude = ("audience",)  # a digest of what a blind study hides from a reader


@admin.register(models.Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    list_display = ("email", "name", "project", "role", "status", "expires_at", "sent_at", "joined_at")
    list_filter = ("status", "role", "project")
    list_select_related = ("project",)
    search_fields = ("email", "name", "project__name")
    exclude = ("token_hash",)


@admin.register(CrowdStudy)
class CrowdStudyAdmin(ReadOnlyAdmin):
    list_display = ("project", "open", "quota", "check_rate", "max_failures", "created_at")
    list_filter = ("open",)
    list_select_related = ("project",)
    search_fields = ("project__name",)
    exclude = ("token",)  # the entry link's secret: its curators see it on the study page


@admin.register(CrowdWorker)
class CrowdWorkerAdmin(ReadOnlyAdmin):
    list_display = ("user", "study", "joined_at", "completed_at")
    list_filter = ("study__project",)
    list_select_related = ("user", "study__project")
    search_fields = ("user__username", "study__project__name")


@admin.register(AttentionCheck)
class AttentionCheckAdmin(ReadOnlyAdmin):
    list_display = ("item", "created_by", "created_at")
    list_filter = ("item__project",)
    list_select_related = ("item", "created_by")
    search_fields = ("item__project__name",)


@admin.register(ItemComment)
class ItemCommentAdmin(ReadOnlyAdmin):
    list_display = ("item", "project", "author", "created_at")
    list_filter = ("project",)
    list_select_related = ("item", "project", "author")
    search_fields = ("text", "author__username", "project__name")


@admin.register(CommentNotification)
class CommentNotificationAdmin(ReadOnlyAdmin):
    list_display = ("user", "comment", "emailed", "read_at", "created_at")
    list_filter = ("emailed",)
    list_select_related = ("user", "comment")
    search_fields = ("user__username", "comment__text")
