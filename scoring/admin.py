from django.contrib import admin

from . import models


@admin.register(models.JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ("name", "backend", "model", "prompt_version", "repeats", "max_concurrency", "temperature")
    list_filter = ("backend", "prompt_version")
    search_fields = ("name", "model", "base_url")


class RunJobInline(admin.TabularInline):
    model = models.RunJob
    extra = 0
    fields = ("report", "step", "status", "attempts", "error", "started_at", "finished_at")
    readonly_fields = fields
    can_delete = False


@admin.register(models.EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = ("__str__", "protocol", "judge_config", "status", "started_at", "finished_at")
    list_filter = ("protocol", "status", "judge_config")
    search_fields = ("name", "error")
    filter_horizontal = ("tasks", "systems")
    inlines = [RunJobInline]


@admin.register(models.RunJob)
class RunJobAdmin(admin.ModelAdmin):
    list_display = ("run", "report", "step", "status", "attempts", "finished_at")
    list_filter = ("status", "step")
    search_fields = ("error", "report__task__key")
    raw_id_fields = ("run", "report")


@admin.register(models.LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    list_display = ("created_at", "judge_config", "step", "ok", "attempts", "tokens_in", "tokens_out", "latency_ms", "cost_usd")
    list_filter = ("ok", "step", "judge_config")
    search_fields = ("error", "request_hash", "model")
    raw_id_fields = ("run",)


@admin.register(models.Statement)
class StatementAdmin(admin.ModelAdmin):
    list_display = ("report", "kind", "position", "text")
    list_filter = ("kind", "judge_config")
    search_fields = ("text",)
    raw_id_fields = ("report",)


@admin.register(models.Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ("report", "step", "target_kind", "target_id", "repeat", "label", "score", "judge_config")
    list_filter = ("step", "label", "judge_config", "target_kind")
    search_fields = ("rationale", "evidence", "error", "report__task__key")
    raw_id_fields = ("report", "call")


@admin.register(models.ScoreCard)
class ScoreCardAdmin(admin.ModelAdmin):
    list_display = ("run", "system", "report", "items_judged", "items_failed")
    list_filter = ("run__protocol", "system")
    search_fields = ("system__name", "report__task__key")
    raw_id_fields = ("run", "report")


@admin.register(models.Embedding)
class EmbeddingAdmin(admin.ModelAdmin):
    list_display = ("model", "content_hash", "dim", "created_at")
    list_filter = ("model",)
    search_fields = ("content_hash",)
    exclude = ("vector",)


@admin.register(models.ProposalBatch)
class ProposalBatchAdmin(admin.ModelAdmin):
    list_display = ("__str__", "judge_config", "status", "done", "failed", "total", "created_by", "created_at")
    list_filter = ("status", "judge_config")
    search_fields = ("error", "tasks__key")
    filter_horizontal = ("tasks",)


@admin.register(models.JudgeBatch)
class JudgeBatchAdmin(admin.ModelAdmin):
    """Batch mode's batches (``scoring.services.batches``): read here, steered through their run."""

    list_display = ("__str__", "status", "provider_status", "requests", "submitted_at", "finished_at")
    list_filter = ("status",)
    search_fields = ("batch_id",)
    readonly_fields = ("run", "status", "batch_id", "input_file_id", "provider_status", "requests", "error",
                       "submitted_at", "finished_at")


@admin.register(models.BatchCall)
class BatchCallAdmin(admin.ModelAdmin):
    list_display = ("custom_id", "run", "job", "status", "tokens_in", "tokens_out", "updated_at")
    list_filter = ("status",)
    search_fields = ("custom_id", "error")
    raw_id_fields = ("run", "job", "judge_config", "batch")
