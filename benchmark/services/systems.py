"""System names: the alias table curators edit, and how importers resolve a released name.

A released name is read as the canonical name its alias gives, else as the existing system
with the same name up to case and separators (``system_key``), else as itself.
"""

from collections.abc import Iterable

from django.db import transaction

from core.audit import audit_log_record
from core.audit_actions import AuditAction

from ..models import System, SystemAlias, system_key


def _state(alias: SystemAlias) -> dict:
    return {"alias": alias.alias, "canonical": alias.canonical, "note": alias.note}


def system_alias_validate(*, alias: str, canonical: str) -> tuple[str, str]:
    """The cleaned pair, or ``ValueError`` saying what is wrong (forms show it as is)."""
    alias, canonical = " ".join(alias.split()), " ".join(canonical.split())
    if not alias or not canonical:
        raise ValueError("an alias needs both a name and the canonical system name")
    if system_key(alias) == system_key(canonical):
        raise ValueError(f"{alias!r} and {canonical!r} are already one system (same name up to case and separators)")
    chained = SystemAlias.objects.filter(key=system_key(canonical)).first()
    if chained is not None:
        raise ValueError(f"{canonical!r} is itself an alias of {chained.canonical!r}; point the alias there")
    return alias, canonical


@transaction.atomic
def system_create(*, name: str, version: str = "", base_model: str = "", workflow: str = System.Workflow.OTHER,
                  description: str = "", actor=None) -> System:
    """A new system (the API's ``POST /api/systems/``), with its audit row."""
    system = System(name=name, version=version, base_model=base_model, workflow=workflow, description=description)
    system.full_clean()
    system.save()
    audit_log_record(target=system, action=AuditAction.SYSTEM_CREATE, actor=actor, after={
        "name": system.name, "version": system.version, "base_model": system.base_model, "workflow": system.workflow})
    return system


@transaction.atomic
def system_alias_set(*, alias: str, canonical: str, note: str = "", actor=None, actor_label: str = "") -> SystemAlias:
    """Create or change the alias (matched up to case and separators), with its revision row."""
    alias, canonical = system_alias_validate(alias=alias, canonical=canonical)
    row = SystemAlias.objects.select_for_update().filter(key=system_key(alias)).first()
    before = _state(row) if row else None
    if row is None:
        row = SystemAlias(key=system_key(alias))
    row.alias, row.canonical, row.note = alias, canonical, note
    if before == _state(row):
        return row
    row.save()
    audit_log_record(target=row, action=AuditAction.ALIAS_SET, actor=actor, actor_label=actor_label, before=before, after=_state(row))
    return row


@transaction.atomic
def system_alias_delete(*, alias: SystemAlias, actor=None, actor_label: str = "") -> None:
    audit_log_record(target=alias, action=AuditAction.ALIAS_DELETE, actor=actor, actor_label=actor_label, before=_state(alias),
                     after=None)
    alias.delete()


@transaction.atomic
def system_display_name_set(*, system: System, display_name: str, actor=None, actor_label: str = "") -> bool:
    """Name the system for people (empty: its name in words, ``benchmark.naming``), with its revision
    row; the identifier is untouched. False when nothing changed."""
    display_name = " ".join(display_name.split())
    row = System.objects.select_for_update().get(pk=system.pk)
    if row.display_name == display_name:
        return False
    before = {"display_name": row.display_name}
    row.display_name = system.display_name = display_name
    row.save(update_fields=["display_name", "updated_at"])
    audit_log_record(target=row, action=AuditAction.SYSTEM_DISPLAY_NAME, actor=actor, actor_label=actor_label, before=before,
                     after={"display_name": display_name})
    return True


def system_names_resolve(names: Iterable[str]) -> dict[str, str]:
    """``{released name: the name imports store it under}``; bounded queries for any number of names."""
    names = set(names)
    aliases = {a.key: a.canonical for a in SystemAlias.objects.filter(key__in={system_key(n) for n in names})}
    wanted = {system_key(aliases.get(system_key(n), n)) for n in names}
    stored: dict[str, str] = {}
    for name in System.objects.order_by("pk").values_list("name", flat=True):
        if system_key(name) in wanted:
            stored.setdefault(system_key(name), name)
    out = {}
    for name in names:
        canonical = aliases.get(system_key(name), name)
        out[name] = stored.get(system_key(canonical), canonical)
    return out
