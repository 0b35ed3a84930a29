import json
import shutil
from collections import Counter
from datetime import date

import pytest

from benchmark.importers.catalogue import run_import
from benchmark.importers.reportbench import cutoff_from_prompt, prompt_level
from benchmark.models import BibEntry, Discipline, GoldReference, ReviewStatus, Survey, SurveyCitation, Task
from core.models import AuditLog
from core.text import normalize_title

from . import assert_rejected, model_counts

pytestmark = pytest.mark.django_db


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def release(datasets):
    return datasets / "reportbench" / "ReportBench_v1.1.jsonl"


def test_full_release_imports_all_tasks_and_gold_bibliographies(release):
    gt = release.with_name("ReportBench_v1.1_GT")
    result = run_import("reportbench", release.parent)  # the folder is accepted too

    assert Task.objects.filter(protocol="reportbench").count() == 100
    assert Survey.objects.filter(source="reportbench", kind="survey").count() == 100
    assert result.counts["task"] == {"created": 100}
    # 35 sentence-level, 32 paragraph-level, 33 detail-rich prompts (see prompt_level).
    levels = Counter(Task.objects.filter(protocol="reportbench").values_list("prompts__level", flat=True))
    assert levels == {"sentence": 35, "paragraph": 32, "detail": 33}
    assert Discipline.objects.filter(taxonomy="reportbench").count() == 10

    # Every gold line is a reference, except repeats of a work already listed (kept once).
    total_lines = sum(len(_lines(p)) for p in gt.glob("*.jsonl"))
    assert total_lines == 16204
    assert GoldReference.objects.filter(task__protocol="reportbench").count() == 15053
    assert SurveyCitation.objects.filter(survey__source="reportbench").count() == 15053
    repeats = sum(int(m.split(": ")[1].split()[0]) for m in result.messages if "repeat one listed earlier" in m)
    assert repeats == total_lines - 15053

    radar = Task.objects.get(protocol="reportbench", key="2312.04861")
    assert radar.gold_references.count() == len(_lines(gt / "2312.04861.jsonl")) == 277
    first = radar.gold_references.order_by("position").first()
    assert first.bib_entry.title == "TJ4DRadSet: A 4D radar dataset for autonomous driving"
    assert (first.origin, first.proposed_by, first.review_status) == ("import", "reportbench", "proposed")
    # A bibliography listing the same works repeatedly keeps each once, in first-seen order.
    dup_lines = _lines(gt / "2106.16125.jsonl")
    distinct = list(dict.fromkeys(normalize_title(line["title"]) for line in dup_lines))
    stored = Task.objects.get(protocol="reportbench", key="2106.16125").gold_references.order_by("position")
    assert len(dup_lines) == 392
    assert [g.bib_entry.normalized_title for g in stored] == distinct


def test_task_survey_and_prompt_fields(release):
    run_import("reportbench", release, keys=["2312.04861", "2302.10588", "2306.05817"])
    task = Task.objects.get(protocol="reportbench", key="2312.04861")
    survey = task.survey
    assert survey.title == "Exploring Radar Data Representations in Autonomous Driving: A Comprehensive Review"
    assert task.excluded_titles == [survey.title]
    assert survey.publication_date == date(2023, 12, 8)  # the first version
    assert survey.doi == "10.1109/tits.2025.3554781"
    assert survey.arxiv_id == "2312.04861" and survey.categories == "cs.CV cs.AI"
    assert (survey.discipline.taxonomy, survey.discipline.code) == ("reportbench", "F")
    # "ensure only papers published before April 2025" → nothing after 31 March 2025.
    assert task.cutoff_date == date(2025, 3, 31)
    assert task.extra["last_version_date"] == "2025-04-21"
    prompt = task.prompts.get()
    assert prompt.level == "sentence" and prompt.text.startswith("Please help me research")

    undated = Task.objects.get(key="2302.10588")
    assert undated.cutoff_date is None
    assert Task.objects.count() == 3


def test_reimport_updates_nothing_and_keeps_reviewed_items(release, tmp_path):
    keys = ["2101.01507", "2112.12284"]
    run_import("reportbench", release, keys=keys)
    snapshot = {t.key: t.updated_at for t in Task.objects.all()}
    second = run_import("reportbench", release, keys=keys)
    assert second.counts["task"] == {"unchanged": 2}
    assert second.counts["gold reference"] == {"unchanged": 5 + 15}
    assert "created" not in second.counts["bib entry"]
    assert {t.key: t.updated_at for t in Task.objects.all()} == snapshot

    # The file changes: one reference leaves, the prompt changes. A reviewed reference stays.
    copy = tmp_path / "ReportBench_v1.1.jsonl"
    rows = [r for r in _lines(release) if r["arxiv_id"] in keys]
    rows[0]["prompt"] = rows[0]["prompt"].replace("Please", "Kindly")
    copy.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    (tmp_path / "ReportBench_v1.1_GT").mkdir()
    gt = release.with_name("ReportBench_v1.1_GT")
    for key in keys:
        shutil.copy(gt / f"{key}.jsonl", tmp_path / "ReportBench_v1.1_GT")
    small = tmp_path / "ReportBench_v1.1_GT" / "2101.01507.jsonl"
    lines = small.read_text().splitlines()
    small.write_text("\n".join(lines[:3]) + "\n")  # drops lines 4 and 5
    task = Task.objects.get(key="2101.01507")
    reviewed = task.gold_references.get(position=4)
    reviewed.review_status = ReviewStatus.ACCEPTED
    reviewed.save()

    third = run_import("reportbench", copy)
    assert third.counts["gold reference"]["removed"] == 1
    assert third.counts["gold reference"]["kept (reviewed or not imported)"] == 1
    assert task.gold_references.count() == 4
    prompt = Task.objects.get(key=rows[0]["arxiv_id"]).prompts.get()
    assert prompt.text.startswith("Kindly") and prompt.version == 2
    assert AuditLog.objects.filter(action="import.update", object_id=prompt.pk).count() == 1
    assert AuditLog.objects.filter(action="import.remove").count() == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Please research X, and ensure only papers published before April 2025 are referenced.", date(2025, 3, 31)),
        ("All references must be published no later than June 2023.", date(2023, 6, 30)),
        ("cited results must have been published on or before May 2021.", date(2021, 5, 31)),
        ("Only refer to and cite papers published **before July 2024**.", date(2024, 6, 30)),
        ("written before [December 2021], with an emphasis", date(2021, 11, 30)),
        ("Help me investigate academic studies before July 2022 on blockchains", date(2022, 6, 30)),
        ("papers prior to 2021", date(2020, 12, 31)),
        ("Please research STPA in learning-enabled systems.", None),
    ],
)
def test_cutoff_from_prompt(text, expected):
    assert cutoff_from_prompt(text)[0] == expected


def test_prompt_level():
    assert prompt_level("Please help me research facial image deblurring before March 2023.") == "sentence"
    paragraph = "I need a literature review on anomaly detection. " * 8
    assert prompt_level(paragraph) == "paragraph"
    assert prompt_level(paragraph + "Focus on top-tier conferences such as CVPR.") == "detail"
    assert prompt_level("Review X:\n1. **Methods**: ...\n2. **Data**: ...") == "detail"


# --- broken input -------------------------------------------------------------------------


def _write_release(folder, tasks, gold):
    folder.mkdir(exist_ok=True)
    (folder / "ReportBench_v1.1.jsonl").write_bytes(tasks)
    gt = folder / "ReportBench_v1.1_GT"
    gt.mkdir(exist_ok=True)
    for key, content in gold.items():
        (gt / f"{key}.jsonl").write_bytes(content)
    return folder / "ReportBench_v1.1.jsonl"


def _task(key, **changes):
    row = {"arxiv_id": key, "title": f"A Survey of {key}", "authors": "A. Author", "abstract": "We survey.",
           "categories": "cs.AI", "versions": [{"version": "v1", "created": "Mon, 1 Jan 2024 10:00:00 GMT"}],
           "application_domain": "Energy and Environmental Sustainability",
           "prompt": "Please help me research the field, only papers published before January 2024."}
    row.update(changes)
    return json.dumps(row)


GOOD_GOLD = b'{"bib_id": "a", "title": "First Paper", "author": "X", "meta_info": {"year": "2020"}}\n'


@pytest.fixture
def stored(tmp_path):
    """A task already imported, so a rejected import must leave it exactly as it was."""
    path = _write_release(tmp_path / "ok", _task("2401.00001").encode(), {"2401.00001": GOOD_GOLD})
    run_import("reportbench", path)
    return model_counts()


@pytest.mark.parametrize(
    ("tasks", "gold", "match"),
    [
        ((_task("2401.00002") + "\n{not json\n").encode(), {},
         r"ReportBench_v1\.1\.jsonl, line 2, column \d+: malformed JSON"),
        (_task("2401.00002", prompt=None).encode(), {},
         r"line 1, field 'prompt': required field is missing"),
        (_task("2401.00002", title=["a list"]).encode(), {},
         r"line 1, field 'title': expected a string, got list"),
        ((_task("2401.00002") + "\n" + _task("2401.00002")).encode(), {"2401.00002": GOOD_GOLD},
         r"line 2, field 'arxiv_id': duplicate arXiv id '2401.00002', first seen at line 1"),
        (b"GIF89a\x00\x00\x01binary", {}, r"line 1: contains NUL bytes"),
        (b'{"arxiv_id": "caf\xe9"}\n', {}, r"line 1: not UTF-8 text"),
        (_task("2401.00002", versions=[{"created": "yesterday"}]).encode(), {"2401.00002": GOOD_GOLD},
         r"line 1, field 'versions\[0\]\.created': not an RFC 2822 date"),
        (_task("2401.00002").encode(), {"2401.00002": GOOD_GOLD + b'{"title": "B", "meta_info": "oops"}\n'},
         r"ReportBench_v1\.1_GT/2401\.00002\.jsonl, line 2, field 'meta_info': expected an object, got str"),
        (_task("2401.00002").encode(), {"2401.00002": GOOD_GOLD + b'{"title": 12}\n'},
         r"_GT/2401\.00002\.jsonl, line 2, field 'title': expected a string, got int"),
        (_task("2401.00002").encode(), {"2401.00002": GOOD_GOLD + b"[1, 2]\n"},
         r"_GT/2401\.00002\.jsonl, line 2: expected a JSON object, got list"),
        (_task("2401.00002").encode(), {}, r"_GT/2401\.00002\.jsonl: gold bibliography file is missing"),
    ],
)
def test_broken_input_is_rejected_and_stores_nothing(tmp_path, stored, tasks, gold, match):
    path = _write_release(tmp_path / "bad", tasks, gold)
    assert_rejected("reportbench", path, match=match)
    assert model_counts() == stored


def test_oversized_line_is_rejected(tmp_path, stored, settings):
    settings.IMPORT_MAX_LINE_BYTES = 2_000
    path = _write_release(tmp_path / "big", (_task("2401.00002", abstract="x" * 5_000)).encode(), {})
    assert_rejected("reportbench", path, match=r"line 1: line longer than the 2,000-byte limit")


def test_gold_line_without_title_is_skipped_with_its_line(tmp_path):
    gold = GOOD_GOLD + b'{"bib_id": "b", "title": "", "author": "Y"}\n{"bib_id": "c", "title": "{}"}\n'
    path = _write_release(tmp_path / "r", _task("2401.00003").encode(), {"2401.00003": gold})
    result = run_import("reportbench", path)
    assert Task.objects.get(key="2401.00003").gold_references.count() == 1
    assert BibEntry.objects.count() == 1
    assert "ReportBench_v1.1_GT/2401.00003.jsonl, line 2: skipped a reference without a usable title" in result.messages
    assert "ReportBench_v1.1_GT/2401.00003.jsonl, line 3: skipped a reference without a usable title" in result.messages
