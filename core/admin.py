from django.contrib import admin

from .models import AnnotatorProfile, AuditLog, WorkerHeartbeat


@admin.register(AnnotatorProfile)
class AnnotatorProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role", "external_id")
    list_filter = ("role", "disciplines")
    search_fields = ("user__username", "external_id")


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("created_at", "action", "content_type", "object_id", "project_id", "actor", "actor_label")
    list_filter = ("action", "content_type")
    search_fields = ("actor__username", "actor_label", "note")
    readonly_fields = [f.name for f in AuditLog._meta.fields]

    # The trail is written only by core.audit, in the transaction of the change it records.
    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("hostname", "pid", "started_at", "last_seen")
    search_fields = ("hostname",)
    list_filter = ("started_at",)
