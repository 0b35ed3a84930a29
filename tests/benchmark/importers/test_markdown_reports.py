import json

import pytest

from benchmark.importers.catalogue import run_import
from benchmark.models import Protocol, Report, System
from tests.factories import TaskFactory

from . import assert_rejected, model_counts

pytestmark = pytest.mark.django_db

REPORT = "# Survey\n\n## Intro\n\nText citing [1].\n\n## References\n\n[1] A paper. 2020.\n"


@pytest.fixture
def tasks():
    return {
        "rb": TaskFactory(protocol=Protocol.REPORTBENCH, key="2312.04861"),
        "ds": TaskFactory(protocol=Protocol.DEEPSCHOLAR, key="2506.02838"),
        "ds_twin": TaskFactory(protocol=Protocol.DEEPSYNTH, key="0"),
        "sl_twin": TaskFactory(protocol=Protocol.SURVEYLENS, key="0"),
    }


def _write(root, relative, text=REPORT):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_both_layouts(tmp_path, tasks):
    _write(tmp_path, "my-agent/2312.04861.md")
    _write(tmp_path, "my-agent/deepsynth/0.md")
    _write(tmp_path, "other/2506.02838.md")
    _write(tmp_path, "other/notes.txt", "not a report")

    result = run_import("reports", tmp_path)
    assert result.counts["report"] == {"created": 3}
    assert result.system("other").skipped == [
        ("other/notes.txt", "not a .md report or a .json report with a response field")]
    assert set(System.objects.values_list("name", flat=True)) == {"my-agent", "other"}
    report = Report.objects.get(task=tasks["ds_twin"])
    assert (report.system.name, report.source_path, report.text) == ("my-agent", "my-agent/deepsynth/0.md", REPORT)

    assert run_import("reports", tmp_path).counts["report"] == {"unchanged": 3}
    _write(tmp_path, "other/2506.02838.md", REPORT + "\nA revised conclusion.\n")
    assert run_import("reports", tmp_path).counts["report"] == {"updated": 1, "unchanged": 2}
    assert Report.objects.count() == 3


@pytest.fixture
def stored(tmp_path, tasks):
    _write(tmp_path / "ok", "agent/2312.04861.md")
    run_import("reports", tmp_path / "ok")
    return model_counts()


@pytest.mark.parametrize(
    ("files", "match"),
    [
        ({"agent/2312.04861.md": REPORT, "agent/9999.99999.md": REPORT}, r"agent/9999\.99999\.md: no task with key '9999\.99999'"),
        ({"agent/0.md": REPORT}, r"agent/0\.md: task key '0' exists in several protocols \(deepsynth, surveylens\)"),
        ({"agent/reportbench/2506.02838.md": REPORT}, r"agent/reportbench/2506\.02838\.md: no task with key '2506\.02838' in protocol reportbench"),
        ({"agent/nosuch/0.md": REPORT}, r"agent/nosuch/0\.md: unknown protocol folder 'nosuch'"),
        ({"agent/2312.04861.md": REPORT, "agent/reportbench/2312.04861.md": REPORT}, r"a second report by agent on task 2312\.04861"),
        ({"agent/2312.04861.md": "   \n"}, r"agent/2312\.04861\.md: the report is empty"),
        ({"agent/a/b/2312.04861.md": REPORT}, r"agent/a/b/2312\.04861\.md: too deeply nested"),
    ],
)
def test_bad_folders_are_rejected(tmp_path, stored, files, match):
    for relative, text in files.items():
        _write(tmp_path / "bad", relative, text)
    assert_rejected("reports", tmp_path / "bad", match=match)


def test_binary_report_is_rejected(tmp_path, stored):
    path = tmp_path / "bad" / "agent" / "2312.04861.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"# Title\n\n\x00\x00\x7fELF")
    assert_rejected("reports", tmp_path / "bad", match=r"agent/2312\.04861\.md, line 3: contains NUL bytes")


def test_empty_folder_is_rejected(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_rejected("reports", tmp_path / "empty", match=r"empty: no <system>/<task key>\.md \(or \.json\) files")


def test_oversized_report_is_rejected(tmp_path, stored, settings):
    settings.IMPORT_MAX_LINE_BYTES = 100
    _write(tmp_path / "bad", "agent/2312.04861.md", REPORT * 5)
    assert_rejected("reports", tmp_path / "bad", match=r"agent/2312\.04861\.md: file of [\d,]+ bytes exceeds the 100-byte limit")


def test_reportbench_generated_report_json(tmp_path, tasks):
    # ReportBench writes each generated report as <arxiv_id>.json with the markdown in "response".
    _write(tmp_path, "deep-research/2312.04861.json", json.dumps({"arxiv_id": "2312.04861", "response": REPORT}))
    result = run_import("reports", tmp_path)
    report = Report.objects.get(system__name="deep-research")
    assert report.text == REPORT and report.task == tasks["rb"]
    assert report.stats["citations"] == 1 and report.stats["resolved_citations"] == 1
    assert result.system("deep-research").reports == 1


@pytest.mark.parametrize(("content", "match"), [
    ('{"response": 3}', r"^deep-research/2312\.04861\.json, field 'response': expected a string, got int$"),
    ('{"prompt": "x"}', r"^deep-research/2312\.04861\.json, field 'response': required field is missing$"),
    ('{"response": "x",\n}', r"^deep-research/2312\.04861\.json, line 2, column 1: malformed JSON: "),
])
def test_bad_reportbench_json_is_rejected(tmp_path, tasks, content, match):
    _write(tmp_path, "deep-research/2312.04861.json", content)
    assert_rejected("reports", tmp_path, match=match)


def test_two_spellings_of_one_system_on_one_task_are_refused(tmp_path, tasks):
    _write(tmp_path, "LLMxMapReduce_V2/2312.04861.md")
    _write(tmp_path, "LLMxMapReduce-V2/2312.04861.md")
    assert_rejected("reports", tmp_path,
                    match=r"^LLMxMapReduce_V2/2312\.04861\.md: a second report by LLMxMapReduce_V2 on task 2312\.04861, "
                          r"after LLMxMapReduce-V2/2312\.04861\.md$")
