from django.contrib import admin

from .models import AnnotatorProfile


@admin.register(AnnotatorProfile)
class AnnotatorProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role", "external_id")
    list_filter = ("role", "disciplines")
    search_fields = ("user__username", "external_id")
