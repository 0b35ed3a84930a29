"""Task sets written in the upstream layouts round-trip through our own importers.

Real upstream files are imported, the set is exported in each format, the database is
emptied and the exported files are imported again: every task comes back with the same
content (its native line, which holds the task, survey, bibliography and every item, is
compared whole; only the curation status, which upstream formats do not carry, differs).
"""

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from benchmark.exporters.native import export_tasks_jsonl
from benchmark.importers.catalogue import run_import
from benchmark.models import ChecklistItem, GoldReference, Nugget, ReviewStatus, Task, TaskPrompt
from benchmark.services.history import proposable_review
from benchmark.services.bundles import taskset_bundle_write
from benchmark.services.tasksets import taskset_create, taskset_freeze
from tests.benchmark.exporters.sample import wipe_benchmark

pytestmark = pytest.mark.django_db

# A slice of ReportBench: the full release holds 16,204 gold lines; these hold 763 of them.
REPORTBENCH_KEYS = ["2312.04861", "2410.08918", "2408.14199", "2206.05498", "2106.02533", "2309.13744"]


def canonical(tasks) -> dict[str, dict]:
    """Each task's native line, without the curation status (no upstream format carries it)."""
    out = {}
    for line in export_tasks_jsonl(tasks).splitlines():
        data = json.loads(line)
        data.pop("status")
        out[f"{data['protocol']}/{data['key']}"] = data
    return out


def _diff(old, new, path="") -> list[str]:
    """Where two JSON values differ (for a readable failure)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for k in sorted(old.keys() | new.keys()) for d in _diff(old.get(k), new.get(k), f"{path}.{k}")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in _diff(a, b, f"{path}[{i}]")]
    return [] if old == new else [f"{path}: {old!r:.80} != {new!r:.80}"]


def bundle(task_set, format_name: str, *, include_history: bool = False, include_unreviewed: bool = True
           ) -> tuple[bytes, dict]:
    """The imported content is unreviewed (proposed): round trips include it explicitly."""
    out = io.BytesIO()
    manifest = taskset_bundle_write(task_set=task_set, format_name=format_name, include_history=include_history,
                                    out=out, include_unreviewed=include_unreviewed)
    return out.getvalue(), manifest


def extract(data: bytes, folder: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(folder)
    return folder


@pytest.fixture
def upstream(datasets):
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    available = {p.stem for p in (datasets / "reportbench" / "ReportBench_v1.1_GT").glob("*.jsonl")}
    keys = [k for k in REPORTBENCH_KEYS if k in available]
    assert len(keys) == len(REPORTBENCH_KEYS)
    run_import("reportbench", datasets / "reportbench" / "ReportBench_v1.1.jsonl", keys=keys)
    run_import("deepscholar", datasets / "deepscholar-bench")
    return taskset_create(name="round trip", tasks=Task.objects.all())


@pytest.fixture
def small(datasets):
    """DeepSynth's four tasks and two ReportBench tasks: enough where no round trip is needed."""
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    run_import("reportbench", datasets / "reportbench" / "ReportBench_v1.1.jsonl", keys=REPORTBENCH_KEYS[1:3])
    return taskset_create(name="round trip", tasks=Task.objects.all())


def test_every_upstream_format_round_trips_into_an_empty_database(upstream, tmp_path):
    task_set = upstream
    before = canonical(Task.objects.all())
    counts = {p: Task.objects.filter(protocol=p).count() for p in ("deepsynth", "reportbench", "deepscholar")}
    assert counts["deepsynth"] == 4 and counts["reportbench"] >= 4 and counts["deepscholar"] == 63
    gold_before = GoldReference.objects.count()
    nuggets_before = Nugget.objects.count()
    items_before = ChecklistItem.objects.count()

    bundles = {name: bundle(task_set, name) for name in ("deepsynth", "reportbench", "deepscholar")}
    # Exporting the unchanged set again gives the same bytes.
    for name, (data, _) in bundles.items():
        assert bundle(task_set, name)[0] == data, name

    deepsynth_manifest = bundles["deepsynth"][1]
    assert deepsynth_manifest["counts"]["tasks"] == 4
    assert deepsynth_manifest["counts"]["checklist items"] == items_before
    assert deepsynth_manifest["counts"]["left out: tasks of other protocols"] == len(before) - 4
    assert bundles["reportbench"][1]["counts"]["gold references"] == GoldReference.objects.filter(
        task__protocol="reportbench").count()
    assert bundles["deepscholar"][1]["counts"]["nuggets"] == nuggets_before

    wipe_benchmark()
    folders = {name: extract(data, tmp_path / name) for name, (data, _) in bundles.items()}
    run_import("deepsynth", folders["deepsynth"] / "deepsynth_tasks.jsonl")
    run_import("reportbench", folders["reportbench"])
    run_import("deepscholar", folders["deepscholar"])

    after = canonical(Task.objects.all())
    assert after.keys() == before.keys()
    differing = {key: _diff(before[key], after[key]) for key in before if after[key] != before[key]}
    assert not differing
    assert GoldReference.objects.count() == gold_before
    assert Nugget.objects.count() == nuggets_before
    assert ChecklistItem.objects.count() == items_before


def test_files_have_the_upstream_layout(upstream, datasets, tmp_path):
    data, manifest = bundle(upstream, "reportbench")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        tasks = [json.loads(line) for line in archive.read("reportbench.jsonl").decode().splitlines()]
        radar_gold = [json.loads(line) for line in archive.read("reportbench_GT/2312.04861.jsonl").decode().splitlines()]
    assert {"manifest.json", "reportbench.jsonl", "reportbench_GT/2312.04861.jsonl"} <= names
    assert set(manifest["files"]) == names - {"manifest.json"}
    upstream_line = next(
        json.loads(line) for line in (datasets / "reportbench" / "ReportBench_v1.1.jsonl").read_text().splitlines()
        if json.loads(line)["arxiv_id"] == "2312.04861"
    )
    radar = next(t for t in tasks if t["arxiv_id"] == "2312.04861")
    for field in ("title", "prompt", "application_domain", "categories", "journal-ref", "comments"):
        assert radar[field] == upstream_line[field], field
    assert radar["doi"] == upstream_line["doi"].lower()  # DOIs are stored in their cleaned, lower-case form
    assert radar["versions"][0]["created"].startswith("Fri, 08 Dec 2023")
    assert len(radar_gold) == 277
    assert radar_gold[0]["bib_id"] == "zheng2022tj4dradset"
    assert radar_gold[0]["title"] == "TJ4DRadSet: A 4D radar dataset for autonomous driving"
    assert radar_gold[0]["meta_info"]["year"] == "2022"

    data, _ = bundle(upstream, "deepscholar")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        papers = archive.read("papers_with_related_works.csv").decode()
        nuggets = json.loads(archive.read("gt_nuggets_outputs/0/res.json"))
    assert papers.splitlines()[0] == "arxiv_id,title,authors,abstract,categories,published_date,clean_latex_related_works"
    assert papers.splitlines()[1].startswith("2506.02838v1,TaxAgent: How Large Language Model Designs Fiscal Policy,")
    upstream_nuggets = json.loads((datasets / "deepscholar-bench" / "gt_nuggets_outputs" / "0" / "res.json").read_text())
    assert [(n["text"], n["importance"]) for n in nuggets["nuggets"]] == [
        (n["text"].strip(), n["importance"]) for n in upstream_nuggets["nuggets"]]


def test_only_curated_content_is_written_and_reimported(upstream, tmp_path):
    task = Task.objects.filter(protocol="deepsynth").order_by("key").first()
    group = task.checklist_groups.order_by("position").first()
    rejected, edited = list(group.items.order_by("position")[:2])
    proposable_review(obj=rejected, status=ReviewStatus.REJECTED, expected_version=rejected.version)
    proposable_review(obj=edited, status=ReviewStatus.EDITED, expected_version=edited.version,
                      edits={"text": "The survey should compare one-stage and two-stage detectors (curated)."})
    paper = Task.objects.get(protocol="deepscholar", key="2506.02838")
    dropped_nugget = paper.nuggets.order_by("position").first()
    proposable_review(obj=dropped_nugget, status=ReviewStatus.REJECTED, expected_version=dropped_nugget.version)
    dropped_gold = paper.gold_references.order_by("position").first()
    proposable_review(obj=dropped_gold, status=ReviewStatus.REJECTED, expected_version=dropped_gold.version)
    n_items, n_nuggets, n_gold = group.items.count(), paper.nuggets.count(), paper.gold_references.count()

    deepsynth_data, manifest = bundle(upstream, "deepsynth")
    assert manifest["counts"]["left out: rejected checklist items"] == 1
    deepscholar_data, manifest = bundle(upstream, "deepscholar")
    assert manifest["counts"]["left out: rejected nuggets"] == 1
    assert manifest["counts"]["left out: rejected gold references"] == 1

    wipe_benchmark()
    run_import("deepsynth", extract(deepsynth_data, tmp_path / "ds") / "deepsynth_tasks.jsonl")
    run_import("deepscholar", extract(deepscholar_data, tmp_path / "dsc"))
    again = Task.objects.get(protocol="deepsynth", key=task.key).checklist_groups.order_by("position").first()
    texts = list(again.items.order_by("position").values_list("text", flat=True))
    assert len(texts) == n_items - 1
    assert rejected.text not in texts
    assert texts[0] == "The survey should compare one-stage and two-stage detectors (curated)."
    paper = Task.objects.get(protocol="deepscholar", key="2506.02838")
    assert paper.nuggets.count() == n_nuggets - 1
    assert dropped_nugget.text not in set(paper.nuggets.values_list("text", flat=True))
    assert paper.gold_references.count() == n_gold - 1


def test_a_task_without_a_usable_prompt_cannot_be_written(small):
    task = Task.objects.filter(protocol="reportbench").order_by("key").last()
    prompt = task.prompts.get()
    proposable_review(obj=prompt, status=ReviewStatus.REJECTED, expected_version=prompt.version)
    with pytest.raises(ValueError, match=f"reportbench task {task.key} has no prompt that is not rejected"):
        bundle(small, "reportbench")


def test_manifest_carries_hash_counts_history_and_the_changelog(small):
    prompt = TaskPrompt.objects.filter(task__protocol="deepsynth").order_by("task__key").first()
    proposable_review(obj=prompt, status=ReviewStatus.ACCEPTED, expected_version=prompt.version)
    frozen = taskset_freeze(task_set=small, allow_uncurated=True)
    data, manifest = bundle(frozen, "native", include_history=True)
    assert manifest["content_hash"] == frozen.content_hash == hashlib.sha256(frozen.snapshot.encode()).hexdigest()
    assert manifest["task_set"] == {"name": "round trip", "version": 1, "frozen": True,
                                    "frozen_at": frozen.frozen_at.isoformat()}
    assert manifest["counts"] == {"tasks": Task.objects.count()}
    assert manifest["changelog"]["previous"] is None
    assert len(manifest["changelog"]["added"]) == Task.objects.count()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.read("tasks.jsonl").decode() == frozen.snapshot
        history = archive.read("history/tasks_with_history.jsonl").decode()
        stored = json.loads(archive.read("manifest.json"))
        for name, info in stored["files"].items():
            assert hashlib.sha256(archive.read(name)).hexdigest() == info["sha256"]
    assert '"history":[' in history and '"history":[' not in frozen.snapshot
    assert stored == manifest
    first = json.loads(history.splitlines()[0])
    assert [h["action"] for h in first["prompts"][0]["history"]] == ["review.accepted"]
