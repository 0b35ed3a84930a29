"""A frozen task set as a Hugging Face dataset folder: one Parquet file per config and a
``README.md`` dataset card (``huggingface_card``) whose YAML header declares the configs, so
``datasets.load_dataset(<folder>)`` (config ``tasks``) and ``load_dataset(<folder>, "nuggets")``
read it offline, and ``hf upload`` (formerly ``huggingface-cli upload``) publishes it as it is
(docs/formats.md).

The configs are the native task lines cut into tables, one row per task or item, each
carrying ``task_id`` (``protocol/key``) and its ``position`` in the task's list, so every
native line can be rebuilt from them (``tests/benchmark/exporters/test_huggingface.py`` does).
Values keep their types; fields the native format holds as free JSON (a task's ``extra``, a
survey's outline, a bibliography entry's ``extra``...) are JSON text in one column. Every
item keeps its provenance (origin, proposed_by, prompt_version, review_status): the dataset
holds every item of the set, as the native export does, and says how each was reviewed.

Rows are written in batches (``BATCH_ROWS`` rows or ``BATCH_BYTES`` of JSON lines, one
row group each) with ``pyarrow.parquet.ParquetWriter`` as the lines are read, so a large set
never sits in memory as tables. A config with no rows is left out: ``datasets``
refuses to load an empty split. Callers above this layer add configs of their own
(``DatasetConfig``: the annotation layer adds labels and gold labels).
"""

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from .native import BIB_FIELDS, canonical_json

SPLIT = "test"  # a benchmark's tasks are test data; every config has this one split
BATCH_ROWS = 1000
BATCH_BYTES = 4 << 20  # a task row holds its survey's full text and bibliography
# malloc gives a batch's memory back once written; pyarrow's default pool (mimalloc) kept ~50 MiB
# more in the worker after a 16,000-reference export.
MEMORY_POOL = pa.system_memory_pool()
# Column types, named as the dataset card's ``features`` name them; "json" is JSON text.
ARROW_TYPES = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
               "json": pa.string()}
PROVENANCE = (("origin", "string"), ("proposed_by", "string"), ("prompt_version", "string"),
              ("review_status", "string"))
BIB_TYPES = {"year": "int64", "citation_count": "int64", "extra": "json"}


@dataclass
class DatasetConfig:
    """One config: its columns (name, type) and its rows (dicts holding those columns)."""

    name: str
    description: str
    columns: tuple[tuple[str, str], ...]
    rows: Iterable[dict] = ()

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([(name, ARROW_TYPES[kind]) for name, kind in self.columns])

    @property
    def path(self) -> str:
        return f"{self.name}/{SPLIT}-00000-of-00001.parquet"

    def cell(self, row: dict, name: str, kind: str):
        value = row.get(name)
        return canonical_json(value) if kind == "json" else value


TASK_COLUMNS = (
    ("task_id", "string"), ("protocol", "string"), ("key", "string"), ("title", "string"), ("status", "string"),
    ("cutoff_date", "string"), ("excluded_titles", "json"), ("source", "string"), ("extra", "json"),
    ("format_version", "int64"),
    ("survey_kind", "string"), ("survey_title", "string"), ("survey_abstract", "string"),
    ("survey_authors", "string"), ("survey_venue", "string"), ("survey_year", "int64"),
    ("survey_publication_date", "string"), ("survey_arxiv_id", "string"), ("survey_doi", "string"),
    ("survey_url", "string"), ("survey_categories", "string"), ("survey_outline", "json"),
    ("survey_content", "json"), ("survey_references", "json"), ("survey_stats", "json"),
    ("survey_full_text", "string"), ("survey_source", "string"), ("survey_external_id", "string"),
    ("survey_extra", "json"), ("discipline_taxonomy", "string"), ("discipline_code", "string"),
    ("discipline_name", "string"), ("survey_bibliography", "json"),
)
SURVEY_JSON = ("outline", "content", "references", "stats", "extra")
ITEM_CONFIGS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    # config name: (what a row is, its columns after task_id and position)
    "prompts": ("a prompt of a task, at one level (general, sentence, paragraph, detail)",
                (("level", "string"), ("text", "string"), *PROVENANCE)),
    "constraint_questions": ("a constraint question of a task (DeepSynth-Eval's strict groups ask it)",
                             (("title", "string"), ("text", "string"), *PROVENANCE)),
    "checklist_groups": ("a checklist group of a task; constraint_question is the position of its question",
                         (("kind", "string"), ("anchor", "string"), ("name", "string"), ("threshold", "float64"),
                          ("clip_factor", "float64"), ("weight", "float64"), ("constraint_question", "int64"),
                          *PROVENANCE)),
    "checklist_items": ("a checklist item; group_position is its group's position in checklist_groups",
                        (("group_position", "int64"), ("group_name", "string"), ("subgroup", "string"),
                         ("text", "string"), ("reward", "float64"), *PROVENANCE)),
    "references": ("a gold reference of a task, with its bibliography entry",
                   (("important", "bool"), ("citation_quartile", "int64"),
                    *((name, BIB_TYPES.get(name, "string")) for name in BIB_FIELDS), *PROVENANCE)),
    "nuggets": ("a nugget of a task (DeepScholar-bench): a fact a good answer states",
                (("text", "string"), ("importance", "string"), *PROVENANCE)),
    "rubric_criteria": ("a rubric criterion: of the task (scope task) or of its survey's discipline (scope "
                        "discipline, repeated for every task of that discipline)",
                        (("scope", "string"), ("component", "string"), ("aspect", "string"), ("name", "string"),
                         ("description", "string"), ("example", "string"), ("weight", "float64"),
                         ("scale_max", "int64"), ("discipline_taxonomy", "string"), ("discipline_code", "string"),
                         ("discipline_name", "string"), *PROVENANCE)),
}
CONFIG_ORDER = ("tasks", *ITEM_CONFIGS)


def _item_rows(task: dict) -> dict[str, list[dict]]:
    """The rows of each item config for one native task line."""
    task_id = f"{task['protocol']}/{task['key']}"
    rows: dict[str, list[dict]] = {name: [] for name in ITEM_CONFIGS}

    def add(config: str, position: int, item: dict, **more) -> None:
        rows[config].append({"task_id": task_id, "position": position, **item, **more})

    for position, prompt in enumerate(task["prompts"]):
        add("prompts", position, prompt)
    for position, question in enumerate(task["constraint_questions"]):
        add("constraint_questions", position, question)
    for group_position, group in enumerate(task["checklist_groups"]):
        add("checklist_groups", group_position, {k: v for k, v in group.items() if k != "items"})
        for position, item in enumerate(group["items"]):
            add("checklist_items", position, item, group_position=group_position, group_name=group["name"])
    for position, gold in enumerate(task["gold_references"]):
        add("references", position, {k: v for k, v in gold.items() if k != "bib"}, **gold["bib"])
    for position, nugget in enumerate(task["nuggets"]):
        add("nuggets", position, nugget)
    discipline = task["survey"]["discipline"]
    for position, criterion in enumerate(discipline["criteria"] if discipline else []):
        add("rubric_criteria", position, criterion, scope="discipline", **_discipline_columns(discipline))
    for position, criterion in enumerate(task["rubric_criteria"]):
        add("rubric_criteria", position, {k: v for k, v in criterion.items() if k != "discipline"}, scope="task",
            **_discipline_columns(criterion["discipline"]))
    return rows


def _discipline_columns(discipline: dict | None) -> dict:
    return {f"discipline_{name}": (discipline or {}).get(name) for name in ("taxonomy", "code", "name")}


def _task_row(task: dict) -> dict:
    survey = task["survey"]
    row = {name: task[name] for name in ("protocol", "key", "title", "status", "cutoff_date", "excluded_titles",
                                          "source", "extra", "format_version")}
    row["task_id"] = f"{task['protocol']}/{task['key']}"
    for name, value in survey.items():
        if name not in ("discipline", "bibliography"):
            row[f"survey_{name}"] = value
    row["survey_bibliography"] = survey["bibliography"]
    row.update(_discipline_columns(survey["discipline"]))
    return row


def task_configs() -> dict[str, DatasetConfig]:
    """The task-content configs, without rows."""
    configs = {"tasks": DatasetConfig("tasks", "a task: its prompt's subject, the survey it is built on (survey_*), "
                                      "that survey's bibliography and discipline", TASK_COLUMNS)}
    for name, (description, columns) in ITEM_CONFIGS.items():
        configs[name] = DatasetConfig(name, description, (("task_id", "string"), ("position", "int64"), *columns))
    return configs


class _ConfigWriter:
    """Rows of one config → its Parquet file, a batch (one row group) at a time; the file exists
    once a row came. A batch waits as JSON lines and Arrow parses them against the config's
    schema (``pyarrow.json``): converting Python objects instead (``from_pylist``, ``pa.array``)
    would import pandas, when installed, into the worker for good (~50 MiB)."""

    def __init__(self, folder: Path, config: DatasetConfig) -> None:
        self.folder, self.config, self.schema = folder, config, config.schema
        self.buffer = bytearray()
        self.batch_rows = 0
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0

    def add(self, row: dict) -> None:
        cells = {name: self.config.cell(row, name, kind) for name, kind in self.config.columns}
        self.buffer += canonical_json(cells).encode("utf-8") + b"\n"
        self.batch_rows += 1
        self.rows += 1
        if self.batch_rows >= BATCH_ROWS or len(self.buffer) >= BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.batch_rows:
            return
        if self.writer is None:
            path = self.folder / self.config.path
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(path, self.schema, compression="zstd", memory_pool=MEMORY_POOL)
        try:
            table = pa_json.read_json(
                pa.BufferReader(pa.py_buffer(self.buffer)), memory_pool=MEMORY_POOL,
                read_options=pa_json.ReadOptions(block_size=len(self.buffer) + 1, use_threads=False),
                parse_options=pa_json.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="error"))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ValueError(f"config {self.config.name}: a row does not fit its columns ({exc})") from None
        self.writer.write_table(table.select(self.schema.names).cast(self.schema))
        self.buffer = bytearray()
        self.batch_rows = 0

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()


@dataclass
class DatasetWritten:
    """What went into the folder: the configs that have rows, with their row counts."""

    configs: list[DatasetConfig] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    curation: dict[str, Counter] = field(default_factory=dict)  # config → "origin/review_status" → items
    task_status: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)  # task source → tasks


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time, without a copy of the whole (``io.StringIO`` keeps one
    at four bytes a character, ``splitlines`` a list of them all)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end > start:
            yield text[start:end]
        start = end + 1


def write_dataset_tables(
    folder: Path, text: str, *, extra_configs: Iterable[DatasetConfig] = (),
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> DatasetWritten:
    """Write the Parquet files of the native JSONL ``text`` (and of ``extra_configs``) under ``folder``."""
    configs = task_configs()
    writers = {name: _ConfigWriter(folder, config) for name, config in configs.items()}
    written = DatasetWritten()
    total = text.count("\n")
    progress(0, total)
    try:
        for done, line in enumerate(_lines(text), start=1):
            task = json.loads(line)
            writers["tasks"].add(_task_row(task))
            written.task_status[task["status"]] += 1
            written.sources[task["source"]] += 1
            for name, rows in _item_rows(task).items():
                for row in rows:
                    writers[name].add(row)
                    written.curation.setdefault(name, Counter())[f"{row['origin']}/{row['review_status']}"] += 1
            progress(done, total)
        for config in extra_configs:
            writer = writers[config.name] = _ConfigWriter(folder, config)
            for row in config.rows:
                writer.add(row)
    finally:
        for writer in writers.values():
            writer.close()
    for writer in writers.values():
        if writer.rows:
            written.configs.append(writer.config)
            written.rows[writer.config.name] = writer.rows
    return written


def dataset_files(folder: Path) -> Iterator[Path]:
    """Every file of a written dataset folder, in a stable order (the card first)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return iter(sorted(files, key=lambda p: (p.name != "README.md", p.relative_to(folder).as_posix())))
