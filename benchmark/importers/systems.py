"""How importers name systems: the spec a released system is created from, and its name read
through the system alias table (``benchmark.services.systems``)."""

from collections.abc import Iterable
from dataclasses import dataclass

from ..models import System
from ..services.systems import system_names_resolve
from .base import ImportResult


@dataclass(frozen=True)
class SystemSpec:
    name: str
    workflow: str = System.Workflow.OTHER
    base_model: str = ""
    description: str = ""
    version: str = ""


def system_names_read(names: Iterable[str], *, result: ImportResult) -> dict[str, str]:
    """``system_names_resolve``, saying in the messages which released names were read as another."""
    resolved = system_names_resolve(names)
    for name, canonical in sorted(resolved.items()):
        if name != canonical and not any(m.startswith(f"system {name!r} imported as {canonical!r}")
                                         for m in result.messages):
            result.messages.append(f"system {name!r} imported as {canonical!r} (system alias table, or the same name "
                                   "up to case and separators)")
    return resolved


def systems_ensure(specs: Iterable[SystemSpec], *, result: ImportResult) -> dict[str, System]:
    """``{released name: System}``, each name read through ``system_names_resolve`` (the alias table,
    then case and separators); missing systems are created from their spec under the resolved
    name, existing ones left as they are."""
    specs = {(s.name, s.version): s for s in specs}
    resolved = system_names_read({n for n, _ in specs}, result=result)
    keyed: dict[tuple[str, str], SystemSpec] = {}
    for (name, version), spec in specs.items():
        keyed.setdefault((resolved[name], version), spec)
    found = {
        (s.name, s.version): s
        for s in System.objects.filter(name__in={n for n, _ in keyed}, version__in={v for _, v in keyed})
    }
    missing = [
        System(name=name, version=version, workflow=s.workflow, base_model=s.base_model, description=s.description)
        for (name, version), s in keyed.items()
        if (name, version) not in found
    ]
    System.objects.bulk_create(missing)
    if missing:
        result.add("system", "created", len(missing))
    found |= {(s.name, s.version): s for s in missing}
    return {name: found[(resolved[name], version)] for name, version in specs}
