from django.contrib import admin

from . import models


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
