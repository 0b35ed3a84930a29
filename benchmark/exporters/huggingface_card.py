"""The ``README.md`` dataset card of a Hugging Face export (``huggingface``).

Its YAML header is what the Hub and ``datasets`` read: ``license`` (from the sources the
tasks were imported from), ``configs`` with their ``data_files`` (``tasks`` is the default),
``dataset_info`` with each config's ``features``, and under ``survey_eval_studio`` the set's
name, version, content hash, the changelog against the previous version and how the content
was curated. The body says the same for people. Nothing in it depends on the export time, so
an unchanged set gives the same card.
"""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

import yaml

from ..importers.deepscholar import SOURCE as DEEPSCHOLAR
from ..importers.deepsynth import SOURCE as DEEPSYNTH
from ..importers.reportbench import SOURCE as REPORTBENCH
from ..importers.surveylens import SOURCE as SURVEYLENS
from .huggingface import CONFIG_ORDER, SPLIT, DatasetWritten


@dataclass(frozen=True)
class SourceLicense:
    license: str  # a Hub license identifier
    release: str


# What each upstream release is published under (datasets/README.md keeps the LICENSE files).
SOURCE_LICENSES = {
    REPORTBENCH: SourceLicense("apache-2.0", "https://github.com/ByteDance-BandAI/ReportBench"),
    DEEPSCHOLAR: SourceLicense("mit", "https://github.com/guestrin-lab/deepscholar-bench"),
    DEEPSYNTH: SourceLicense("mit", "https://github.com/Kwai-Klear/DeepSynth-Eval"),
    SURVEYLENS: SourceLicense("mit", "https://github.com/TechnicolorGUO/SurveyLens"),
}
UNKNOWN_LICENSE = "unknown"


@dataclass(frozen=True)
class CardContext:
    name: str
    version: int
    description: str
    content_hash: str
    frozen_at: datetime
    frozen_by: str | None
    changes: dict  # ``bundles.taskset_changes``
    written: DatasetWritten
    generator: str


def _licenses(sources: Counter) -> list[str]:
    return sorted({SOURCE_LICENSES[s].license if s in SOURCE_LICENSES else UNKNOWN_LICENSE for s in sources})


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


def _changelog(changes: dict) -> dict:
    previous = changes["previous"]
    return {
        "previous": None if previous is None else {"version": previous["version"],
                                                   "content_hash": previous["content_hash"] or None},
        "added": len(changes["added"]), "removed": len(changes["removed"]), "changed": len(changes["changed"]),
        "unchanged": changes["unchanged"],
    }


def card_header(context: CardContext) -> dict:
    written = context.written
    return {
        "pretty_name": f"{context.name} v{context.version}",
        "license": _licenses(written.sources),
        "tags": ["survey-generation", "deep-research", "evaluation", "survey-eval-studio"],
        "size_categories": [_size_category(written.rows["tasks"])],
        "configs": [
            {"config_name": config.name, **({"default": True} if config.name == "tasks" else {}),
             "data_files": [{"split": SPLIT, "path": config.path}]}
            for config in written.configs
        ],
        "dataset_info": [
            {"config_name": config.name,
             "features": [{"name": name, "dtype": "string" if kind == "json" else kind}
                          for name, kind in config.columns]}
            for config in written.configs
        ],
        "survey_eval_studio": {
            "task_set": context.name, "version": context.version,
            "content_hash": context.content_hash,
            "content_hash_of": "sha256 of the frozen snapshot: the native JSONL of the set's tasks",
            "frozen_at": context.frozen_at.isoformat(), "generator": context.generator,
            "rows": dict(written.rows), "changelog": _changelog(context.changes),
            "curation": {"tasks": dict(sorted(written.task_status.items())),
                         **{name: dict(sorted(counts.items())) for name, counts in written.curation.items()}},
        },
    }


def _table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows), ""]


def _body(context: CardContext) -> list[str]:
    written, changes = context.written, context.changes
    lines = [f"# {context.name} v{context.version}", ""]
    if context.description.strip():
        lines += [context.description.strip(), ""]
    lines += [
        f"A frozen task set of Survey Eval Studio: {written.rows['tasks']} evaluation tasks for AI-written research "
        "surveys and deep-research reports, with their " + ", ".join(
            c.name.replace("_", " ") for c in written.configs if c.name in CONFIG_ORDER[1:]) + ".",
        "",
        *([f"Also: {', '.join(c.name.replace('_', ' ') for c in others)} of annotation projects on these tasks, "
           "with the usernames of the annotators and curators (`annotator`, `decided_by`): drop or pseudonymise "
           "those columns before publishing if they must not be public.", ""] if (others := [
               c for c in written.configs if c.name not in CONFIG_ORDER]) else []),
        "## Configs", "",
        "Each config is one Parquet file with one split, `test`. Rows carry `task_id` (`protocol/key`); item rows "
        "also their `position` in the task's list. Columns holding free-form JSON are JSON text (`json.loads` them).",
        "",
        *_table(("config", "rows", "one row is", "JSON text columns"),
                [(f"`{c.name}`", written.rows[c.name], c.description,
                  ", ".join(f"`{name}`" for name, kind in c.columns if kind == "json"))
                 for c in written.configs]),
        "```python",
        "from datasets import load_dataset",
        "",
        'tasks = load_dataset("<this folder or repo>")["test"]  # the default config, tasks',
        *(f'{c.name} = load_dataset("<this folder or repo>", "{c.name}")["test"]'
          for c in written.configs if c.name != "tasks"),
        "```", "",
        "## Sources and license", "",
        *_table(("source", "tasks", "license", "release"),
                [(source or "(none: made in the studio)", n,
                  SOURCE_LICENSES[source].license if source in SOURCE_LICENSES else UNKNOWN_LICENSE,
                  SOURCE_LICENSES[source].release if source in SOURCE_LICENSES else "")
                 for source, n in sorted(written.sources.items())]),
    ]
    if any(source not in SOURCE_LICENSES for source in written.sources):
        lines += ["Tasks of a source without a known license are marked `unknown`: set the license of what you "
                  "publish before uploading it.", ""]
    lines += [
        "## Content hash", "",
        f"`{context.content_hash}`: the sha256 of the set's frozen snapshot (the native JSONL of its tasks), "
        f"frozen at {context.frozen_at.isoformat()}" + (f" by {context.frozen_by}." if context.frozen_by else "."),
        "Exporting the same version again gives the same content hash and the same task configs" + (
            "; the other configs (labels) hold what was stored when it was exported." if any(
                c.name not in CONFIG_ORDER for c in written.configs) else "."), "",
        "## Changes", "",
    ]
    previous = changes["previous"]
    if previous is None:
        lines += ["The first version: no previous version to compare with.", ""]
    else:
        lines += [f"Against v{previous['version']} (content hash `{previous['content_hash'] or 'not frozen'}`): "
                  f"{len(changes['added'])} tasks added, {len(changes['removed'])} removed, "
                  f"{len(changes['changed'])} changed, {changes['unchanged']} unchanged.", ""]
        lines += [f"- added: `{key}`" for key in changes["added"]]
        lines += [f"- removed: `{key}`" for key in changes["removed"]]
        for change in changes["changed"]:
            parts = ([f"fields {', '.join(change['fields'])}"] if change["fields"] else []) + [
                f"{kind} +{n['added']} −{n['removed']} ~{n['changed']}" for kind, n in change["items"].items()]
            lines.append(f"- changed: `{change['task']}` ({'; '.join(parts)})")
        lines.append("")
    lines += [
        "## Curation", "",
        "Items are imported from the sources above, proposed by an LLM or written by experts (`origin`, "
        "`proposed_by`), and reviewed by curators (`review_status`: accepted, edited, rejected, or proposed when "
        "nobody reviewed it yet). Every item of the set is here with its status; filter on `review_status` to "
        "keep the accepted and edited ones.", "",
        "Tasks by status: " + ", ".join(f"{status} {n}" for status, n in sorted(written.task_status.items())) + ".",
        "",
        *_table(("config", "origin/review status: items"),
                [(f"`{name}`", ", ".join(f"{key} {n}" for key, n in sorted(counts.items())))
                 for name, counts in written.curation.items()]),
        f"Written by {context.generator}.", "",
    ]
    return lines


def dataset_card(context: CardContext) -> str:
    header = yaml.safe_dump(card_header(context), sort_keys=False, allow_unicode=True, width=1000)
    return "---\n" + header + "---\n\n" + "\n".join(_body(context))
