"""SurveyLens as cloned, on real excerpts of its repository (``datasets/surveylens/repository``):
one human survey published twice (``.md`` and ``_split.json``), a lower-case discipline folder
(``Qwen/education``), the processing summaries, and a list-form reference-label file whose
SurveyX response is empty."""

import shutil

import pytest

from annotation.models import PairwisePreference
from benchmark.importers.catalogue import run_import
from benchmark.models import Report, Survey, Task

pytestmark = pytest.mark.django_db

TOPIC_TITLE = "The Impact of COVID-19 Pandemic on Education System in Developing Countries- A Review"
PROCESSED = "results/processed"


@pytest.fixture
def repository(datasets):
    return datasets / "surveylens" / "repository"


@pytest.fixture
def clone(repository, tmp_path):
    target = tmp_path / "SurveyLens"
    shutil.copytree(repository, target)
    return target


def test_both_human_files_are_one_task(repository):
    calls = []
    result = run_import("surveylens", repository, progress=lambda done, total: calls.append((done, total)))

    task = Task.objects.get(protocol="surveylens")
    human = repository / PROCESSED / "Human/Education"
    markdown = (human / f"{TOPIC_TITLE}.md").read_text(encoding="utf-8")
    assert task.survey.kind == Survey.Kind.SURVEY and task.survey.title == TOPIC_TITLE
    assert task.survey.full_text == markdown  # the published text, not rebuilt from the SSR
    assert task.survey.outline and task.survey.outline[0][1]  # the structure, from <title>_split.json
    assert task.survey.discipline.name == "Education"
    assert sorted(Report.objects.filter(task=task).values_list("system__name", flat=True)) == [
        "AutoSurvey2", "Gemini", "InteractiveSurvey", "Qwen", "SciSage"]
    # 2 human files + 5 system files + 2 processing summaries, nothing skipped
    assert result.counts["file"] == {"read": 9}
    assert all(not row["skipped"] for row in result.system_rows())
    assert calls[0] == (0, 6) and calls[-1] == (6, 6) and len(calls) == 7


def test_lower_case_discipline_folder_is_named(repository):
    result = run_import("surveylens", repository)

    assert (f"{PROCESSED}/Qwen/education/: read as the Education discipline (folder named 'education')"
            in result.messages)
    qwen = Report.objects.get(system__name="Qwen")
    assert qwen.source_path.startswith(f"{PROCESSED}/Qwen/education/03_The_Impact_of_COVID-19")


def test_case_variant_twin_folders_merge_and_the_duplicate_is_reported(clone):
    lower = clone / PROCESSED / "Qwen/education"
    twin = clone / PROCESSED / "Qwen/Education"
    twin.mkdir()
    (original,) = lower.iterdir()
    shutil.copy(original, twin / "01_The_Impact_of_COVID-19_Pandemic_on_Education_System_in_Devel_20251224_000000_split.json")

    result = run_import("surveylens", clone)

    assert f"{PROCESSED}/Qwen/education/: merged into {PROCESSED}/Qwen/Education/ (Education; the same discipline " \
           "up to case)" in result.messages
    skipped = {row["system"]: row["skipped"] for row in result.system_rows()}["Qwen"]
    assert len(skipped) == 1 and skipped[0]["file"] == f"{PROCESSED}/Qwen/education/{original.name}"
    assert skipped[0]["reason"].startswith("a second Qwen survey on ")
    assert Task.objects.count() == 1 and Report.objects.filter(system__name="Qwen").count() == 1


def test_processing_summaries_are_reported(repository):
    result = run_import("surveylens", repository)

    assert result.counts["processing summary"] == {"reported": 2}
    assert (f"{PROCESSED}/processing_summary.json: upstream's processing summary, reported and not stored "
            "(markdown_conversion: total 772, converted 772, skipped 0, failed 0; json_processing: total 772, "
            "success 772, failed 0, skipped 0)") in result.messages
    assert any(m.startswith(f"{PROCESSED}/Gemini/Education/processing_summary.json: upstream's processing summary")
               for m in result.messages)


def test_an_unreadable_file_is_skipped_with_its_reason(clone):
    markdown = clone / PROCESSED / "Human/Education" / f"{TOPIC_TITLE}.md"
    markdown.write_bytes(markdown.read_bytes() + b"\n\xff\xfe")

    result = run_import("surveylens", clone)

    (row,) = [r for r in result.system_rows() if r["system"] == "Human"]
    assert row["skipped"] == [{"file": f"{PROCESSED}/Human/Education/{TOPIC_TITLE}.md",
                               "reason": row["skipped"][0]["reason"]}]
    assert row["skipped"][0]["reason"].startswith("unreadable: line ") and "not UTF-8 text" in row["skipped"][0]["reason"]
    task = Task.objects.get()
    assert task.survey.kind == Survey.Kind.SURVEY and task.survey.outline  # from the SSR, which was readable
    assert Report.objects.filter(task=task).count() == 5


def test_nul_characters_are_removed_and_reported(clone):
    """Upstream's Groundwater .md holds a NUL byte and a Physics _split.json 31 ``\\u0000`` escapes."""
    markdown = clone / PROCESSED / "Human/Education" / f"{TOPIC_TITLE}.md"
    text = markdown.read_bytes()
    markdown.write_bytes(text + b"\x00tail")
    ssr = clone / PROCESSED / "Qwen/education"
    (qwen,) = ssr.iterdir()
    qwen.write_text(qwen.read_text(encoding="utf-8").replace('"content": "', '"content": "\\u0000', 1),
                    encoding="utf-8")

    result = run_import("surveylens", clone)

    assert result.counts["NUL character"] == {"removed": 2}
    assert f"{PROCESSED}/Human/Education/{TOPIC_TITLE}.md: 1 NUL characters removed (text cannot hold them); the " \
           "rest was read" in result.messages
    assert Task.objects.get().survey.full_text == text.decode("utf-8") + "tail"
    assert "\x00" not in Report.objects.get(system__name="Qwen").text


def test_empty_reference_response_is_stored_and_counted(repository):
    result = run_import("surveylens-annotations", repository / "human_annotation")

    assert PairwisePreference.objects.count() == 2
    empty = PairwisePreference.objects.get(external_id="1314")
    assert empty.shown_left == "" and empty.report_left.system.name == "SurveyX"
    assert empty.report_left.text == "" and empty.report_left.stats["empty"] is True
    assert empty.choice == PairwisePreference.Choice.RIGHT and empty.component == "reference"
    assert result.counts["preference"] == {"created": 2, "with an empty response": 1}
    assert result.counts["report"]["empty (the system produced nothing)"] == 1
    assert ("human_annotation/Annotator_CS_07_reference_labels.json: 1 records with an empty response (SurveyX 1); "
            "stored with the empty text as shown (a report made of nothing else is empty, flagged stats.empty)"
            in result.messages)
    full = PairwisePreference.objects.get(external_id="1157")
    assert full.choice == PairwisePreference.Choice.TIE and full.report_left.stats.get("empty") is None


def test_labels_after_the_processed_tree_keep_the_full_reports(repository):
    run_import("surveylens", repository)
    run_import("surveylens-annotations", repository / "human_annotation")

    # the label file's topics are other topics than the excerpt's processed one: three tasks
    assert Task.objects.count() == 3
    assert PairwisePreference.objects.count() == 2


def _grouped(entries):
    from pathlib import Path

    from benchmark.importers.base import ImportResult
    from benchmark.importers.surveylens_processed import _groups

    result = ImportResult()
    files = [(system, code, Path(f"{system}/{code}/{name}"), f"{system}/{code}/{name}") for system, code, name in entries]
    groups = {g.name: sorted(s for s, _, _ in g.files) + (["Human"] if g.human else []) for g in _groups(files, result=result)}
    return groups, result


def test_topics_are_grouped_as_upstream_names_them():
    """Real names of upstream's Education, Business, Sociology and Biology folders."""
    groups, result = _grouped([
        # a full topic name that begins a longer one is a topic of its own
        ("Autosurvey", "education", "Large Language Models in Education_split.json"),
        ("Autosurvey", "education", "Large Language Models in Education Practical and Ethical Challenges_split.json"),
        ("SciSage", "education", "Large_Language_Models_in_Education_Practical_and__paper_split.json"),  # cut at 50
        ("Human", "education", "Practical and Ethical Challenges of Large Language Models in Education- A Systematic "
                               "Scoping Review.md"),
        ("Human", "education", "Practical and Ethical Challenges of Large Language Models in Education- A Systematic "
                               "Scoping Review_split.json"),
        ("Qwen", "education", "01_Practical_and_Ethical_Challenges_of_Large_Language_Models_in_20251225_043039_split.json"),
        # AutoSurvey2 filed its Business topics under Biology/ too
        ("AutoSurvey2", "biology", "Corruption_in_International_Business_survey_split.json"),
        ("AutoSurvey2", "business", "Corruption_in_International_Business_survey_split.json"),
        ("Autosurvey", "business", "Corruption in International Business_split.json"),
    ])
    assert groups == {
        "Large Language Models in Education": ["Autosurvey"],
        "Large Language Models in Education Practical and Ethical Challenges": [
            "Autosurvey", "Qwen", "SciSage", "Human"],
        "Corruption in International Business": ["AutoSurvey2", "Autosurvey"],
    }
    ((file, reason),) = [s for row in result.system_rows() for s in ((x["file"], x["reason"]) for x in row["skipped"])]
    assert file == "AutoSurvey2/biology/Corruption_in_International_Business_survey_split.json"
    assert reason == ("AutoSurvey2 has this topic in Business/ too, where the other systems have it: filed under the "
                      "wrong discipline")


def test_a_human_survey_never_joins_a_topic_its_systems_already_wrote_on():
    groups, _ = _grouped([
        ("Human", "sociology", "Intersectionality and coalitions in social movement research A survey.md"),
        ("Autosurvey", "sociology", "Intersectionality and Coalitions in Social Movement Research_split.json"),
        ("Autosurvey", "sociology", "Longitudinal Social Research in Sociology_split.json"),
    ])
    assert groups == {"Longitudinal Social Research in Sociology": ["Autosurvey"],
                      "Intersectionality and coalitions in social movement research A survey": ["Autosurvey", "Human"]}
