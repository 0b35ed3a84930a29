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
    assert "other/notes.txt: ignored (not a .md file)" in result.messages
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
    assert_rejected("reports", tmp_path / "empty", match=r"empty: no <system>/<task key>\.md files")


def test_oversized_report_is_rejected(tmp_path, stored, settings):
    settings.IMPORT_MAX_LINE_BYTES = 100
    _write(tmp_path / "bad", "agent/2312.04861.md", REPORT * 5)
    assert_rejected("reports", tmp_path / "bad", match=r"agent/2312\.04861\.md: file of [\d,]+ bytes exceeds the 100-byte limit")
