from django.contrib import admin

from . import models


@admin.register(models.WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("hostname", "pid", "started_at", "last_seen")
    search_fields = ("hostname",)
    list_filter = ("started_at",)
