from django.contrib import admin

from . import models


@admin.register(models.AnnotatorProfile)
class AnnotatorProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role", "external_id")
    list_filter = ("role", "disciplines")
    search_fields = ("user__username", "external_id")
    filter_horizontal = ("disciplines",)


@admin.register(models.PairwisePreference)
class PairwisePreferenceAdmin(admin.ModelAdmin):
    list_display = ("task", "annotator", "report_left", "report_right", "choice", "component", "labeled_at")
    list_filter = ("choice", "component", "source")
    search_fields = ("task__key", "annotator__username", "reason")
    raw_id_fields = ("task", "report_left", "report_right")
