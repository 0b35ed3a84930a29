import json
import shutil
from collections import Counter

import pytest
from django.contrib.auth import get_user_model

from annotation.models import AnnotatorProfile, PairwisePreference
from benchmark.importers.catalogue import run_import
from benchmark.importers.surveylens import ssr_markdown
from annotation.importers.surveylens_annotations import outline_title
from benchmark.importers.surveylens import shares_topic_word
from benchmark.models import Report, Survey, System, Task

from . import assert_rejected, model_counts

pytestmark = pytest.mark.django_db

SYSTEMS = {"Autosurvey", "Gemini", "InteractiveSurvey", "Qwen", "SciSage", "SurveyForge", "SurveyX"}


@pytest.fixture
def topic(datasets):
    return datasets / "surveylens" / "luciferase"


@pytest.fixture
def annotations(datasets):
    return datasets / "surveylens" / "human_annotation"


def test_topic_folder(topic):
    result = run_import("surveylens", topic)

    task = Task.objects.get(protocol="surveylens", key="luciferase")
    survey = task.survey
    human = json.loads((topic / "Human.json").read_text())
    assert survey.title == "Brightening up Biology: Advances in Luciferase Systems for in Vivo Imaging"
    assert (survey.discipline.taxonomy, survey.discipline.code, survey.discipline.name) == (
        "surveylens", "biology", "Biology")
    assert survey.outline == human["outline"] and len(survey.outline) == 8
    assert [s["heading"] for s in survey.content] == [s["heading"] for s in human["content"]]
    assert survey.content[1]["text"] == human["content"][1]["content"]
    assert survey.references == [] and survey.stats["references"] == 0
    assert survey.stats["words"] == sum(s["stats"]["word_count"] for s in human["content"])
    assert "luciferase/Human.json: the human-written survey has an empty reference list" in result.messages
    assert task.prompts.get().text == "Luciferase Systems for In Vivo Imaging in Biology"

    assert set(System.objects.values_list("name", flat=True)) == SYSTEMS
    assert Report.objects.filter(task=task).count() == 7
    report = Report.objects.get(task=task, system__name="SurveyX")
    ssr = json.loads((topic / "SurveyX.json").read_text())
    assert report.sources[0]["kind"] == "ssr"
    assert report.sources[0]["outline"] == ssr["outline"]
    assert len(report.sources[0]["content"]) == 24 and len(report.sources[0]["references"]) == 3
    assert report.text.startswith(f"# {ssr['outline'][0][1]}\n")
    assert "\n# References\n\n[1] Seeing into darkness: Scotopic visual recognition\n" in report.text
    assert ssr["content"][1]["content"][:80] in report.text
    assert System.objects.get(name="SurveyX").workflow == "survey_pipeline"

    again = run_import("surveylens", topic)
    assert again.counts["report"] == {"unchanged": 7}
    assert again.counts["survey"] == {"unchanged": 1}


def test_ssr_markdown_keeps_sections_missing_from_the_outline():
    ssr = {"outline": [[1, "Title"], [2, "A"]],
           "content": [{"heading": "A", "level": 2, "content": "a text"}, {"heading": "B", "level": 2, "content": "b"}],
           "references": [{"number": None, "text": "Ref one", "title": "Ref one"}]}
    assert ssr_markdown(ssr) == "# Title\n\n## A\n\na text\n\n## B\n\nb\n\n# References\n\n[1] Ref one\n"


def test_annotations(topic, annotations):
    run_import("surveylens", topic)  # shares the systems
    result = run_import("surveylens-annotations", annotations)

    assert PairwisePreference.objects.filter(source="surveylens").count() == 100
    assert result.counts["preference"] == {"created": 100}
    users = get_user_model().objects.filter(username__startswith="Annotator_")
    assert sorted(u.username for u in users) == ["Annotator_Biology_01", "Annotator_EnvSci_02"]
    assert not any(u.has_usable_password() for u in users)
    bio = AnnotatorProfile.objects.get(external_id="Annotator_Biology_01")
    assert bio.role == "annotator" and len(bio.qualification) == 11
    assert bio.qualification[0]["aspect_name"] == "Formal Precision"
    assert [d.name for d in bio.disciplines.all()] == ["Biology"]
    env = AnnotatorProfile.objects.get(external_id="Annotator_EnvSci_02")
    assert [d.name for d in env.disciplines.all()] == ["Environmental Science"]

    # 5 topics per annotator, 5 systems' outlines on each, on topic-only surveys.
    topic_tasks = Task.objects.filter(protocol="surveylens", survey__kind=Survey.Kind.TOPIC)
    assert topic_tasks.count() == 10
    wolbachia = topic_tasks.get(key="endosymbiosis-of-wolbachia-in-biology")
    assert wolbachia.title == "Endosymbiosis of Wolbachia in Biology"
    assert wolbachia.survey.discipline.name == "Biology"
    assert Report.objects.filter(task__in=topic_tasks).count() == 50
    assert System.objects.count() == 7  # the five annotated systems were already known

    bio_prefs = PairwisePreference.objects.filter(annotator=bio.user)
    assert Counter(bio_prefs.values_list("choice", flat=True)) == {"left": 25, "right": 25}
    env_prefs = PairwisePreference.objects.filter(annotator=env.user)
    assert Counter(env_prefs.values_list("choice", flat=True)) == {"left": 29, "right": 21}
    first = bio_prefs.get(external_id="1001")
    assert (first.report_left.system.name, first.report_right.system.name) == ("Gemini", "SurveyX")
    assert first.task == wolbachia and first.component == "outline" and first.choice == "left"
    assert first.report_left.text.startswith("# Literature Review: Living in the endosymbiotic world of Wolbachia")
    assert first.labeled_at.isoformat() == "2026-04-09T08:17:15.452000+00:00"

    off_topic = [m for m in result.messages if "possibly off-topic" in m]
    assert sum("Annotator_Biology_01" in m and "SurveyX's outline" in m for m in off_topic) == 4
    assert any("Gemini's outline 'A review on key design and operational parameters" in m for m in off_topic)

    stamps = dict(PairwisePreference.objects.values_list("pk", "updated_at"))
    again = run_import("surveylens-annotations", annotations / "Annotator_Biology_01_outline_labels.json")
    assert again.counts["preference"] == {"unchanged": 50}
    assert "report" not in again.counts  # every (topic, system) already has its report, which is kept
    assert again.counts["task"] == {"unchanged": 5}
    assert dict(PairwisePreference.objects.values_list("pk", "updated_at")) == stamps


def test_topic_heuristic():
    assert shares_topic_word("Nanotechnology in Environmental Science", "Nano-enabled Environmental Solutions")
    assert shares_topic_word("Organoids as Host Models", "Organoid-based infection models")
    assert not shares_topic_word("Mycobiome in the Gut", "Human Lice and Pediculosis: A Survey of Biology")
    assert outline_title("\n# Literature Review: Cyanobacteria- Review\n## Abstract") == "Cyanobacteria- Review"


# --- broken input -------------------------------------------------------------------------


@pytest.fixture
def one_file(annotations, tmp_path):
    data = json.loads((annotations / "Annotator_Biology_01_outline_labels.json").read_text())
    data["part_c"] = data["part_c"][:3]
    path = tmp_path / "labels.json"

    def write(change=None):
        copy = json.loads(json.dumps(data))
        if change:
            change(copy)
        path.write_text(json.dumps(copy))
        return path

    return write


def test_mapping_given_as_a_python_dict_string(one_file):
    def as_string(data):
        for record in data["part_c"]:
            record["mapping"] = str(record["mapping"])  # "{'response_a_model': 'Gemini', ...}"

    run_import("surveylens-annotations", one_file(as_string))
    assert PairwisePreference.objects.count() == 3


@pytest.fixture
def stored(one_file):
    run_import("surveylens-annotations", one_file())
    return model_counts()


def _set(index, **fields):
    def change(data):
        data["part_c"][index].update(fields)
    return change


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (_set(1, mapping="__import__('os').system('true')"), r"labels\.json, field 'part_c\[1\]\.mapping': not a dict literal"),
        (_set(1, mapping="{'response_a_model': 'Gemini'}"),
         r"field 'part_c\[1\]\.mapping\.response_b_model': required field is missing"),
        (_set(2, mapping={"response_a_model": "Gemini", "response_b_model": "Gemini"}),
         r"field 'part_c\[2\]\.mapping\.response_b_model': both responses are by Gemini"),
        (_set(2, choice="C_better"), r"field 'part_c\[2\]\.choice': expected A_better, B_better or Tie, got 'c_better'"),
        (_set(0, labeled_at="last tuesday"), r"field 'part_c\[0\]\.labeled_at': not an ISO date-time"),
        (_set(0, response_a=None), r"field 'part_c\[0\]\.response_a': required field is missing"),
        (_set(1, id="1001"), r"part_c\[1\], field 'id': duplicate record id '1001'"),
        (_set(1, response_b="# A different outline"), r"part_c\[1\], field 'response_b': Gemini's outline .* differs"),
        (lambda data: data.update(discipline="Astrology"), r"field 'discipline': unknown SurveyLens discipline"),
        (lambda data: data.update(part_c={"a": 1}), r"field 'part_c': expected a list, got dict"),
    ],
)
def test_broken_annotations_are_rejected(one_file, stored, change, match):
    assert_rejected("surveylens-annotations", one_file(change), match=match)


def test_tie_is_allowed(one_file):
    run_import("surveylens-annotations", one_file(_set(0, choice="tie")))
    assert PairwisePreference.objects.get(external_id="1001").choice == "tie"


def test_binary_and_malformed_files_are_rejected(one_file, stored, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\x00\x01\x02")
    assert_rejected("surveylens-annotations", bad, match=r"bad\.json: contains NUL bytes")
    bad.write_text('{"annotator_id": "x", "part_c": [', encoding="utf-8")
    assert_rejected("surveylens-annotations", bad, match=r"bad\.json, line 1, column \d+: malformed JSON: ")


def test_broken_ssr_is_rejected(topic, tmp_path):
    folder = tmp_path / "luciferase"
    shutil.copytree(topic, folder)
    data = json.loads((folder / "Qwen.json").read_text())
    data["content"][3]["level"] = "two"
    (folder / "Qwen.json").write_text(json.dumps(data))
    assert_rejected("surveylens", folder, match=r"luciferase/Qwen\.json, field 'content\[3\]\.level': expected an integer")
    data["content"][3]["level"] = 2
    data["outline"][0] = ["1", "Title"]
    (folder / "Qwen.json").write_text(json.dumps(data))
    assert_rejected("surveylens", folder, match=r"luciferase/Qwen\.json, field 'outline\[0\]': expected \[level, title\]")
    (folder / "Human.json").unlink()
    assert_rejected("surveylens", folder, match=r"luciferase: the human-written survey Human\.json is missing")


def test_oversized_annotation_record(one_file, stored, settings):
    # The outline-label object is streamed: the limit applies to each record (with the parser's
    # 64 KiB read-ahead), not to the file; test_surveylens_annotations checks a file over 16 MiB.
    settings.IMPORT_MAX_LINE_BYTES = 1_000
    path = one_file(_set(1, response_a="x" * 200_000))
    assert_rejected("surveylens-annotations", path,
                    match=r"^labels\.json, field 'part_c\[1\]': longer than the 1,000-byte limit$")
