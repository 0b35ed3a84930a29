"""``manage.py upstream_check``: a repository imported whole as cloned, and the table it prints."""

import json
import shutil
from collections import Counter

import pytest
from django.core.management import call_command

from benchmark.importers.upstream import REPOSITORIES, Table, repository_find, unread_kind

pytestmark = pytest.mark.django_db

SURVEYLENS = next(r for r in REPOSITORIES if r.name == "SurveyLens")


@pytest.fixture
def upstream(datasets, tmp_path):
    """An upstream folder whose SurveyLens clone is the committed excerpt (plus a file that is code)."""
    clone = tmp_path / "upstream" / "surveylens"  # found up to case
    shutil.copytree(datasets / "surveylens" / "repository", clone)
    (clone / "scripts").mkdir()
    (clone / "scripts" / "bt.py").write_text("print('code')\n", encoding="utf-8")
    return tmp_path / "upstream"


def test_the_child_imports_every_step_and_counts_from_the_database(upstream, tmp_path):
    clone = repository_find(upstream, SURVEYLENS)
    out = tmp_path / "report.json"
    call_command("upstream_check", str(clone), child="SurveyLens", out=str(out))

    report = json.loads(out.read_text(encoding="utf-8"))
    assert [(s["format"], s["path"], s["status"]) for s in report["steps"]] == [
        ("surveylens", "results/processed", "done"), ("surveylens-annotations", "human_annotation", "done")]
    # one task from the processed tree, two topics of the label file
    assert report["tasks"] == 3
    assert report["reports"] == {"AutoSurvey2": 2, "Gemini": 1, "InteractiveSurvey": 2, "Qwen": 1, "SciSage": 2,
                                 "SurveyX": 1}
    assert (report["preferences"], report["empty_preferences"], report["empty_reports"]) == (2, 1, 1)
    opened = {p.removeprefix(str(clone.resolve()) + "/") for p in report["opened"]}
    assert "results/processed/processing_summary.json" in opened
    assert "human_annotation/Annotator_CS_07_reference_labels.json" in opened
    assert "scripts/bt.py" not in opened and "LICENSE" not in opened
    assert report["skipped"] == []
    # files the importers name in a message ("<file>: ...") are listed with it
    assert ["results/processed/processing_summary.json", "upstream's processing summary, reported and not stored "
            "(markdown_conversion: total 772, converted 772, skipped 0, failed 0; json_processing: total 772, "
            "success 772, failed 0, skipped 0)"] in report["named"]


def test_the_table_says_what_was_read_skipped_and_stored():
    table = Table(SURVEYLENS, files=12, absent=["results/processed/SurveyX/Physics/Quantum.json"], read=10,
                  skipped=[("a/x_split.json", "a second Qwen survey on 'x'; a/y was read"),
                           ("b/1.json", "not a .json file directly in b/"), ("b/2.json", "not a .json file directly in b/")],
                  unread=Counter({"scripts (code)": 1, ". (other)": 1}), tasks=3,
                  reports={"Qwen": 1, "SurveyX": 1}, empty_reports=1, preferences=2, empty_preferences=1,
                  seconds=1.25, peak_mb=150.4,
                  steps=[{"format": "surveylens", "path": "results/processed", "status": "done"}])
    rows = dict(table.rows())
    assert rows["files in the clone"] == ("12 (+1 in git but absent from the checkout: "
                                          "results/processed/SurveyX/Physics/Quantum.json)")
    assert rows["not read, named by the importer with the reason"] == (
        "3<br>2 × not a .json file directly in b/ (e.g. `b/1.json`)"
        "<br>`a/x_split.json`: a second Qwen survey on 'x'; a/y was read")
    assert rows["reports per system"] == "Qwen 1, SurveyX 1 (1 empty, flagged)"
    assert rows["preferences"] == "2 (1 with an empty response)"
    assert (rows["time"], rows["peak memory (max RSS)"]) == ("1.2 s", "150 MB")
    assert table.markdown().startswith("#### SurveyLens (TechnicolorGUO/SurveyLens)\n\n| | |\n|---|---|\n")


def test_unread_files_are_counted_by_folder_and_kind(tmp_path):
    clone = tmp_path / "SciSage"
    assert unread_kind(clone / "core" / "generation" / "x" / "engine.py", clone) == "core/generation (code)"
    assert unread_kind(clone / "Readme.md", clone) == ". (documentation)"
    assert repository_find(tmp_path, SURVEYLENS) is None
