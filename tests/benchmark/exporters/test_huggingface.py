"""A frozen task set exported as a Hugging Face dataset folder loads with ``datasets.load_dataset``,
offline, and gives back the native export: every task line is rebuilt from the configs' rows
and compared whole with the frozen snapshot."""

import io
import json
import os
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from benchmark.exporters import huggingface
from benchmark.importers.catalogue import run_import
from benchmark.models import Task
from benchmark.services.bundles import taskset_bundle_write, taskset_dataset_write, taskset_formats_for
from benchmark.services.tasksets import taskset_create, taskset_freeze, taskset_new_version, taskset_update
from tests.benchmark.exporters.sample import discipline_with_criteria, rich_task

pytestmark = pytest.mark.django_db


def frozen(name: str, tasks, **options):
    task_set = taskset_create(name=name, tasks=tasks)
    return taskset_freeze(task_set=task_set, allow_uncurated=True, **options)


def rebuilt_lines(load, folder: Path, configs: list[str]) -> dict[str, dict]:
    """Native task lines rebuilt from the loaded configs (independently of the exporter's code)."""
    rows = {name: load(folder, name)["test"].to_list() for name in configs}
    by_task: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for name, config_rows in rows.items():
        if name == "tasks":
            continue
        for row in config_rows:
            by_task[row.pop("task_id")][name].append(row)
    provenance = ("origin", "proposed_by", "prompt_version", "review_status")

    def items(task_id: str, name: str, *fields: str, **where) -> list[dict]:
        found = [r for r in by_task[task_id][name] if all(r[k] == v for k, v in where.items())]
        ordered = sorted(found, key=lambda r: r["position"])
        return [{f: r[f] for f in (*fields, *provenance)} | {"_row": r} for r in ordered]

    def clean(found: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "_row"} for r in found]

    lines = {}
    for row in rows["tasks"]:
        task_id = row["task_id"]
        discipline = None
        if row["discipline_code"] is not None:
            discipline = {"taxonomy": row["discipline_taxonomy"], "code": row["discipline_code"],
                          "name": row["discipline_name"],
                          "criteria": clean(items(task_id, "rubric_criteria", "component", "aspect", "name",
                                                  "description", "example", "weight", "scale_max",
                                                  scope="discipline"))}
        survey = {name[len("survey_"):]: value for name, value in row.items() if name.startswith("survey_")}
        for name in ("outline", "content", "references", "stats", "extra", "bibliography"):
            survey[name] = json.loads(survey[name])
        survey["discipline"] = discipline
        groups = []
        for group in items(task_id, "checklist_groups", "kind", "anchor", "name", "threshold", "clip_factor",
                           "weight", "constraint_question"):
            position = group.pop("_row")["position"]
            group["items"] = clean(items(task_id, "checklist_items", "subgroup", "text", "reward",
                                         group_position=position))
            groups.append(group)
        golds = []
        for gold in items(task_id, "references", "important", "citation_quartile"):
            source = gold.pop("_row")
            gold["bib"] = {f: source[f] for f in ("title", "authors", "year", "venue", "arxiv_id", "doi", "url",
                                                  "abstract", "citation_count")}
            gold["bib"]["extra"] = json.loads(source["extra"])
            golds.append(gold)
        criteria = []
        for criterion in items(task_id, "rubric_criteria", "component", "aspect", "name", "description", "example",
                               "weight", "scale_max", scope="task"):
            source = criterion.pop("_row")
            criterion["discipline"] = None if source["discipline_code"] is None else {
                "taxonomy": source["discipline_taxonomy"], "code": source["discipline_code"],
                "name": source["discipline_name"]}
            criteria.append(criterion)
        lines[task_id] = {
            "protocol": row["protocol"], "key": row["key"], "title": row["title"], "status": row["status"],
            "cutoff_date": row["cutoff_date"], "excluded_titles": json.loads(row["excluded_titles"]),
            "source": row["source"], "extra": json.loads(row["extra"]), "format_version": row["format_version"],
            "survey": survey,
            "prompts": clean(items(task_id, "prompts", "level", "text")),
            "constraint_questions": clean(items(task_id, "constraint_questions", "title", "text")),
            "checklist_groups": groups, "gold_references": golds,
            "nuggets": clean(items(task_id, "nuggets", "text", "importance")),
            "rubric_criteria": criteria,
        }
    return lines


def native_lines(task_set) -> dict[str, dict]:
    """The tasks of the set's native export bundle (``tasks.jsonl``), by ``protocol/key``."""
    out = io.BytesIO()
    taskset_bundle_write(task_set=task_set, format_name="native", include_history=False, out=out)
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as archive:
        text = archive.read("tasks.jsonl").decode("utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    return {f"{line['protocol']}/{line['key']}": line for line in lines}


def card_header(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_a_frozen_set_round_trips_through_load_dataset(load_dataset, tmp_path, datasets):
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    run_import("deepscholar", datasets / "deepscholar-bench")
    run_import("reportbench", datasets / "reportbench" / "ReportBench_v1.1.jsonl", keys=["2410.08918"])
    discipline = discipline_with_criteria()
    rich_task("rich-1", discipline=discipline)
    rich_task("rich-2", discipline=discipline)
    task_set = frozen("round trip", Task.objects.all())
    folder = tmp_path / "dataset"
    rows = taskset_dataset_write(task_set=task_set, folder=folder)

    header = card_header(folder)
    configs = [c["config_name"] for c in header["configs"]]
    assert configs == [name for name in huggingface.CONFIG_ORDER if name in rows]
    assert set(configs) == set(huggingface.CONFIG_ORDER)  # every kind of item is in this set

    default = load_dataset(folder)  # no config named: the default, tasks
    assert list(default) == ["test"] and default["test"].num_rows == Task.objects.count() == rows["tasks"]
    expected = native_lines(task_set)
    got = rebuilt_lines(load_dataset, folder, configs)
    assert list(got) == list(expected)  # same tasks, same order
    for key in expected:
        assert got[key] == expected[key], key
    # Counted independently of the exporter: the items of each kind in the snapshot.
    lines = expected.values()
    assert rows["checklist_items"] == sum(len(g["items"]) for t in lines for g in t["checklist_groups"]) > 500
    assert rows["references"] == sum(len(t["gold_references"]) for t in lines) > 1000
    assert rows["nuggets"] == sum(len(t["nuggets"]) for t in lines) > 100


def test_the_card_states_license_features_hash_changelog_and_curation(load_dataset, tmp_path, datasets):
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    made_here = rich_task("rich-1")
    made_here.source = ""
    made_here.save()
    imported = Task.objects.filter(source="deepsynth")
    assert imported.count() == 4
    first = frozen("cards", imported)
    second = taskset_new_version(task_set=first)
    dropped = imported.order_by("key").first()
    taskset_update(task_set=second, tasks=Task.objects.exclude(pk=dropped.pk))
    second = taskset_freeze(task_set=second, allow_uncurated=True)

    folder = tmp_path / "v2"
    taskset_dataset_write(task_set=second, folder=folder)
    header = card_header(folder)
    assert header["license"] == ["mit", "unknown"]  # DeepSynth-Eval's MIT; the task made here has no source
    assert header["pretty_name"] == "cards v2"
    studio = header["survey_eval_studio"]
    assert studio["content_hash"] == second.content_hash
    assert studio["changelog"] == {"previous": {"version": 1, "content_hash": first.content_hash},
                                   "added": 1, "removed": 1, "changed": 0, "unchanged": 3}
    assert studio["curation"]["tasks"] == {"curated": 1, "draft": 3}
    items = studio["curation"]["checklist_items"]
    assert sum(items.values()) == studio["rows"]["checklist_items"]
    # The features the card declares are the Parquet files' columns, and datasets reads them so.
    for info in header["dataset_info"]:
        name = info["config_name"]
        path = folder / next(c["data_files"][0]["path"] for c in header["configs"] if c["config_name"] == name)
        schema = pq.read_schema(path)
        assert [f["name"] for f in info["features"]] == schema.names
        loaded = load_dataset(folder, name)["test"].features
        assert {f["name"]: f["dtype"] for f in info["features"]} == {k: v.dtype for k, v in loaded.items()}
    body = (folder / "README.md").read_text(encoding="utf-8")
    assert f"`{second.content_hash}`" in body
    assert f"- added: `{made_here.protocol}/rich-1`" in body
    assert f"- removed: `{dropped.protocol}/{dropped.key}`" in body
    assert "https://github.com/Kwai-Klear/DeepSynth-Eval" in body
    # An unchanged set gives the same card and the same files.
    again = tmp_path / "again"
    taskset_dataset_write(task_set=second, folder=again)
    assert (again / "README.md").read_bytes() == (folder / "README.md").read_bytes()


def test_the_bundle_is_the_zipped_folder_and_only_frozen_sets_offer_the_format(load_dataset, tmp_path):
    task = rich_task("rich-1")
    unfrozen = taskset_create(name="draft set", tasks=[task])
    assert "huggingface" not in {f.name for f in taskset_formats_for(unfrozen)}
    with pytest.raises(ValueError, match="not frozen"):
        taskset_bundle_write(task_set=unfrozen, format_name="huggingface", include_history=False, out=io.BytesIO())
    task_set = taskset_freeze(task_set=unfrozen)
    assert "huggingface" in {f.name for f in taskset_formats_for(task_set)}
    with pytest.raises(ValueError, match="include_history"):
        taskset_bundle_write(task_set=task_set, format_name="huggingface", include_history=True, out=io.BytesIO())

    out = io.BytesIO()
    manifest = taskset_bundle_write(task_set=task_set, format_name="huggingface", include_history=False, out=out)
    assert manifest["counts"]["tasks rows"] == 1 and manifest["content_hash"] == task_set.content_hash
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as archive:
        names = archive.namelist()
        archive.extractall(folder)
    assert names[0] == "README.md" and names[-1] == "manifest.json"
    assert "tasks/test-00000-of-00001.parquet" in names
    assert sorted(manifest["files"]) == sorted(n for n in names if n != "manifest.json")
    assert rebuilt_lines(load_dataset, folder, [c["config_name"] for c in card_header(folder)["configs"]]) == \
        native_lines(task_set)
    second = io.BytesIO()
    taskset_bundle_write(task_set=task_set, format_name="huggingface", include_history=False, out=second)
    assert second.getvalue() == out.getvalue()  # deterministic, as every bundle


def test_rows_are_written_in_batches(monkeypatch, tmp_path, datasets):
    run_import("reportbench", datasets / "reportbench" / "ReportBench_v1.1.jsonl", keys=["2410.08918", "2312.04861"])
    task_set = frozen("batches", Task.objects.all())
    monkeypatch.setattr(huggingface, "BATCH_ROWS", 50)
    monkeypatch.setattr(huggingface, "BATCH_BYTES", 20_000)  # a task row (its bibliography) passes it alone
    batches: dict[str, list[int]] = defaultdict(list)
    write_table = huggingface.pq.ParquetWriter.write_table

    def counted(self, table, *args, **kwargs):
        batches[Path(self.where).parent.name].append(table.num_rows)
        return write_table(self, table, *args, **kwargs)

    monkeypatch.setattr(huggingface.pq.ParquetWriter, "write_table", counted)
    rows = taskset_dataset_write(task_set=task_set, folder=tmp_path / "d")
    assert rows["references"] > 100 and rows["tasks"] == 2
    assert {name: sum(sizes) for name, sizes in batches.items()} == rows
    assert max(batches["references"]) <= 50 and batches["tasks"] == [1, 1]
    parquet = pq.ParquetFile(tmp_path / "d" / "references" / "test-00000-of-00001.parquet")
    assert parquet.metadata.num_rows == rows["references"]
    assert parquet.metadata.num_row_groups == len(batches["references"]) > 2


WITHOUT_PANDAS = """
import sys, django
django.setup()
from pathlib import Path
from benchmark.exporters.huggingface import write_dataset_tables
written = write_dataset_tables(Path(sys.argv[1]), Path(sys.argv[2]).read_text(encoding="utf-8"))
assert written.rows["tasks"] == 1, written.rows
print("pandas imported" if "pandas" in sys.modules else "no pandas")
"""


def test_writing_does_not_import_pandas(tmp_path):
    """pyarrow imports pandas (when installed) as soon as it converts Python objects; the
    worker would keep those ~50 MiB for good after one export."""
    task_set = taskset_freeze(task_set=taskset_create(name="p", tasks=[rich_task("rich-1")]))
    (tmp_path / "tasks.jsonl").write_text(task_set.snapshot, encoding="utf-8")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    done = subprocess.run([sys.executable, "-c", WITHOUT_PANDAS, str(tmp_path / "d"), str(tmp_path / "tasks.jsonl")],
                          capture_output=True, text=True, env=env, cwd=Path(__file__).parents[3], timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no pandas"
