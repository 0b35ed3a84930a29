"""Judge configurations: create, edit, and try the endpoint with one cheap call.

A configuration stores no key: it chooses among the endpoints the deployment allows, and the key
each endpoint gets is bound to it in the settings (``scoring.judges.endpoints``). Every endpoint
rule lives in ``judge_endpoint_check``. Verdicts point to the configuration that produced
them, so once a configuration has verdicts what shapes a verdict (backend, endpoint, model,
temperature, prompts, repeats, options) is frozen; make a new configuration to change it.
Every change writes its revision row in the same transaction.
"""

import time
from dataclasses import dataclass
from urllib.parse import urlparse

from django.core.exceptions import ValidationError
from django.db import transaction
from django.forms.models import model_to_dict

from core.audit import audit_log_record
from core.audit_actions import AuditAction

from ..judges.endpoints import endpoint_check, redact
from ..judges.options import options_check
from ..models import JudgeConfig, Verdict

FIELDS = ("name", "backend", "model", "base_url", "temperature", "prompt_version", "repeats",
          "max_concurrency", "timeout_seconds", "max_retries", "price_input_per_million",
          "price_output_per_million", "embedding_backend", "options", "batch", "batch_discount")
CHECKED_VALUES = ("temperature", "repeats", "max_concurrency", "timeout_seconds", "max_retries",
                  "price_input_per_million", "price_output_per_million", "options", "batch_discount")
# What shapes a verdict: frozen once the configuration has verdicts.
VERDICT_SHAPING = ("backend", "base_url", "model", "temperature", "prompt_version", "repeats", "embedding_backend",
                   "options")


def judge_endpoint_check(*, backend: str, base_url: str) -> None:
    """Refuse an endpoint a configuration may not use; ``ValueError`` names the field."""
    if backend not in JudgeConfig.Backend.values:
        raise ValueError(f"backend: {backend!r} is not one of {', '.join(JudgeConfig.Backend.values)}")
    if backend == JudgeConfig.Backend.OFFLINE:
        if base_url:
            raise ValueError("base_url: the offline judge calls no endpoint; leave the base URL empty")
        return
    if base_url:
        parsed = urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url: {base_url!r} is not an http(s) URL")
        if parsed.username or parsed.password:
            raise ValueError("base_url: put no credentials in the URL; keys are bound to endpoints in the settings")
    try:
        endpoint_check(base_url)
    except ValidationError as exc:
        raise ValueError("base_url: " + " ".join(exc.messages)) from None


def _state(config: JudgeConfig) -> dict:
    return {name: value for name, value in model_to_dict(config, fields=FIELDS).items()}


def _apply(config: JudgeConfig, fields: dict) -> None:
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ValueError(f"{unknown[0]}: not a judge configuration field")
    for name, value in fields.items():
        setattr(config, name, value.strip() if isinstance(value, str) and name != "options" else value)
    if not config.name:
        raise ValueError("name: required")
    if JudgeConfig.objects.filter(name=config.name).exclude(pk=config.pk).exists():
        raise ValueError(f"name: a judge configuration called {config.name!r} already exists")
    if config.backend == JudgeConfig.Backend.OPENAI and not config.model:
        raise ValueError("model: an OpenAI-compatible judge needs the model name at its endpoint")
    if config.batch and config.backend != JudgeConfig.Backend.OPENAI:
        raise ValueError("batch: only an OpenAI-compatible endpoint has a Batch API; the offline judge answers at once")
    judge_config_values_check(config)
    judge_endpoint_check(backend=config.backend, base_url=config.base_url)


def judge_config_values_check(config: JudgeConfig) -> None:
    """The model's rules for a configuration's numbers and options (``JudgeConfig`` field
    validators: options a JSON object, temperature 0–2, timeout above 0, ...) and each option
    against what its backend declares (``judges.options``: known key, type, range); ``ValueError``
    naming the first field (and option) that breaks one."""
    try:
        config.clean_fields(exclude=[f.name for f in JudgeConfig._meta.fields if f.name not in CHECKED_VALUES])
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise ValueError(f"{field}: {'; '.join(messages)}") from None
    try:
        options_check(config.backend, config.options if config.options is not None else {})
    except ValueError as exc:
        raise ValueError(f"options: {exc}") from None


def judge_config_runnable(config: JudgeConfig) -> None:
    """Refuse to run on a configuration saved before the value rules (or edited behind the
    services' back): ``ValidationError`` naming it and the field, instead of a crash mid-run."""
    try:
        judge_config_values_check(config)
    except ValueError as exc:
        raise ValidationError(f"judge configuration {config.name!r} cannot run: {exc}; fix it on its page "
                              "(or make a new configuration)") from None


@transaction.atomic
def judge_config_create(*, actor, **fields) -> JudgeConfig:
    config = JudgeConfig(backend=fields.get("backend", ""))
    _apply(config, fields)
    config.save()
    audit_log_record(target=config, action=AuditAction.JUDGE_CONFIG_CREATE, actor=actor, after=_state(config))
    return config


@transaction.atomic
def judge_config_update(*, config: JudgeConfig, actor, **fields) -> JudgeConfig:
    """Change a configuration; with verdicts, only what does not shape a verdict may change."""
    config = JudgeConfig.objects.select_for_update().get(pk=config.pk)
    before = _state(config)
    changed = [name for name, value in fields.items() if name in before and before[name] != value]
    frozen = [name for name in changed if name in VERDICT_SHAPING]
    if frozen and Verdict.objects.filter(judge_config=config).exists():
        raise ValueError(f"{frozen[0]}: this configuration has verdicts, which must keep pointing at what produced "
                         "them; make a new configuration to change " + ", ".join(frozen))
    _apply(config, fields)
    config.save()
    after = _state(config)
    if after != before:
        audit_log_record(target=config, action=AuditAction.JUDGE_CONFIG_UPDATE, actor=actor,
                         before={k: before[k] for k in before if before[k] != after[k]},
                         after={k: after[k] for k in after if before[k] != after[k]})
    return config


@dataclass(frozen=True)
class ConnectionTest:
    ok: bool
    message: str
    seconds: float


def judge_config_test(*, config: JudgeConfig) -> ConnectionTest:
    """One cheap call to the configuration's endpoint (a one-token chat completion) and what came
    back, or the error; every text from the endpoint with any key redacted."""
    from ..judges.transport import describe, endpoint_url, make_client

    if config.is_heuristic:
        return ConnectionTest(True, "The offline judge runs here and calls no endpoint.", 0.0)
    started = time.monotonic()
    try:
        judge_endpoint_check(backend=config.backend, base_url=config.base_url)
        client = make_client(config)
        completion = client.chat.completions.create(
            model=config.model, messages=[{"role": "user", "content": "Reply with the word OK."}], max_tokens=1,
            temperature=0,
        )
        answer = (completion.choices[0].message.content or "").strip() if completion.choices else ""
    except Exception as exc:  # any failure is the answer to "does it work?"
        reason = describe(exc) if not isinstance(exc, ValueError) else str(exc)
        return ConnectionTest(False, f"{endpoint_url(config)}: {redact(reason)}", time.monotonic() - started)
    # What the endpoint says is shown on a page: redacted like its errors (it may echo the key).
    model = redact(str(getattr(completion, "model", "") or config.model))
    return ConnectionTest(True, f"{endpoint_url(config)} answered as {model}: {redact(answer)!r}",
                          time.monotonic() - started)
