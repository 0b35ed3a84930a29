from django import forms
from django.contrib import admin
from django.contrib.contenttypes.admin import GenericTabularInline
from django.core.exceptions import ValidationError

from core.models import AuditLog

from . import models
from .services.systems import system_alias_delete, system_alias_set, system_alias_validate, system_display_name_set

PROPOSABLE_FILTERS = ("origin", "review_status")


class RevisionInline(GenericTabularInline):
    model = AuditLog
    ct_field = "content_type"
    ct_fk_field = "object_id"
    extra = 0
    can_delete = False
    fields = ("created_at", "action", "actor", "actor_label", "before", "after", "note")
    readonly_fields = fields


@admin.register(models.Discipline)
class DisciplineAdmin(admin.ModelAdmin):
    list_display = ("name", "code", "taxonomy")
    list_filter = ("taxonomy",)
    search_fields = ("name", "code")
    filter_horizontal = ("annotators",)


@admin.register(models.BibEntry)
class BibEntryAdmin(admin.ModelAdmin):
    list_display = ("title", "year", "arxiv_id", "doi", "citation_count")
    list_filter = ("year",)
    search_fields = ("title", "normalized_title", "authors", "arxiv_id", "doi")


@admin.register(models.SurveyCitation)
class SurveyCitationAdmin(admin.ModelAdmin):
    list_display = ("survey", "position", "key", "bib_entry")
    list_filter = ("survey__source",)
    search_fields = ("survey__title", "bib_entry__title", "key")
    raw_id_fields = ("survey", "bib_entry")


class SurveyCitationInline(admin.TabularInline):
    model = models.SurveyCitation
    extra = 0
    raw_id_fields = ("bib_entry",)


@admin.register(models.Survey)
class SurveyAdmin(admin.ModelAdmin):
    list_display = ("title", "kind", "year", "arxiv_id", "discipline", "source")
    list_filter = ("kind", "source", "discipline")
    search_fields = ("title", "abstract", "arxiv_id", "doi", "authors")
    inlines = [SurveyCitationInline]


@admin.register(models.Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("key", "protocol", "title", "status", "cutoff_date", "source")
    list_filter = ("protocol", "status", "source")
    search_fields = ("key", "title", "survey__title")
    raw_id_fields = ("survey",)


class ProposableAdmin(admin.ModelAdmin):
    list_filter = PROPOSABLE_FILTERS
    inlines = [RevisionInline]


@admin.register(models.TaskPrompt)
class TaskPromptAdmin(ProposableAdmin):
    list_display = ("task", "level", "review_status", "origin")
    list_filter = ("level",) + PROPOSABLE_FILTERS
    search_fields = ("text", "task__key")
    raw_id_fields = ("task",)


@admin.register(models.ConstraintQuestion)
class ConstraintQuestionAdmin(ProposableAdmin):
    list_display = ("task", "title", "review_status", "origin")
    search_fields = ("title", "text", "task__key")
    raw_id_fields = ("task",)


@admin.register(models.ChecklistGroup)
class ChecklistGroupAdmin(ProposableAdmin):
    list_display = ("name", "task", "kind", "threshold", "clip_factor", "weight", "review_status")
    list_filter = ("kind", "anchor") + PROPOSABLE_FILTERS
    search_fields = ("name", "task__key")
    raw_id_fields = ("task", "constraint_question")


@admin.register(models.ChecklistItem)
class ChecklistItemAdmin(ProposableAdmin):
    list_display = ("text", "group", "subgroup", "reward", "review_status")
    list_filter = ("group__kind",) + PROPOSABLE_FILTERS
    search_fields = ("text", "subgroup", "group__name")
    raw_id_fields = ("group",)


@admin.register(models.GoldReference)
class GoldReferenceAdmin(ProposableAdmin):
    list_display = ("bib_entry", "task", "important", "citation_quartile", "review_status")
    list_filter = ("important", "citation_quartile") + PROPOSABLE_FILTERS
    search_fields = ("bib_entry__title", "task__key")
    raw_id_fields = ("task", "bib_entry")


@admin.register(models.Nugget)
class NuggetAdmin(ProposableAdmin):
    list_display = ("text", "task", "importance", "review_status")
    list_filter = ("importance",) + PROPOSABLE_FILTERS
    search_fields = ("text", "task__key")
    raw_id_fields = ("task",)


@admin.register(models.RubricCriterion)
class RubricCriterionAdmin(ProposableAdmin):
    list_display = ("name", "component", "aspect", "discipline", "task", "weight", "review_status")
    list_filter = ("component", "discipline") + PROPOSABLE_FILTERS
    search_fields = ("name", "aspect", "description")
    raw_id_fields = ("task",)


@admin.register(models.System)
class SystemAdmin(admin.ModelAdmin):
    """Curators name systems for people here (the display name, through its service with a revision);
    the identifying fields come from imports and are only changed by superusers."""

    list_display = ("name", "version", "display_name", "label", "base_model", "workflow")
    list_filter = ("workflow",)
    search_fields = ("name", "display_name", "base_model")
    inlines = [RevisionInline]

    def get_readonly_fields(self, request, obj=None):
        if request.user.is_superuser:
            return ()
        return ("name", "version", "base_model", "workflow", "description")

    def save_model(self, request, obj, form, change):
        display_name = obj.display_name
        if change:  # the display name through its service; anything else a superuser changed as usual
            obj.display_name = form.initial.get("display_name", "")
        super().save_model(request, obj, form, change)
        system_display_name_set(system=obj, display_name=display_name, actor=request.user)


class SystemAliasForm(forms.ModelForm):
    class Meta:
        model = models.SystemAlias
        fields = ("alias", "canonical", "note")

    def clean(self):
        data = super().clean()
        try:
            system_alias_validate(alias=data.get("alias") or "", canonical=data.get("canonical") or "")
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        return data

    def validate_unique(self):
        pass  # the service matches the alias up to case and separators and updates that row


@admin.register(models.SystemAlias)
class SystemAliasAdmin(admin.ModelAdmin):
    """The curator's alias table; every write goes through the services, with its revision row."""

    form = SystemAliasForm
    list_display = ("alias", "canonical", "note", "updated_at")
    list_filter = ("canonical",)
    search_fields = ("alias", "canonical", "note")
    fields = ("alias", "canonical", "note")
    inlines = [RevisionInline]

    def save_model(self, request, obj, form, change):
        if change and "alias" in form.changed_data:
            system_alias_delete(alias=models.SystemAlias.objects.get(pk=obj.pk), actor=request.user)
        saved = system_alias_set(alias=obj.alias, canonical=obj.canonical, note=obj.note, actor=request.user)
        obj.pk, obj.key = saved.pk, saved.key

    def delete_model(self, request, obj):
        system_alias_delete(alias=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for alias in queryset:
            system_alias_delete(alias=alias, actor=request.user)


@admin.register(models.Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ("task", "system", "submitted_at", "content_hash")
    list_filter = ("system", "task__protocol")
    search_fields = ("task__key", "system__name", "content_hash")
    raw_id_fields = ("task",)
    exclude = ("parsed",)


@admin.register(models.TaskSet)
class TaskSetAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "frozen_at", "content_hash")
    list_filter = ("frozen_at",)
    search_fields = ("name", "description")
    filter_horizontal = ("tasks",)
    exclude = ("snapshot",)


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ("created_at", "format", "original_name", "status", "requested_by", "finished_at")
    list_filter = ("format", "status")
    search_fields = ("original_name", "requested_by__username")
    readonly_fields = [f.name for f in models.ImportJob._meta.fields]  # jobs change only through their worker
