"""SurveyLens label files as upstream publishes them (``human_annotation/``): the list-form content
and reference files are built here in their published record shape."""

import json
from collections import Counter

import pytest
from django.conf import settings

from annotation.models import AnnotatorProfile, PairwisePreference
from benchmark.importers.catalogue import run_import
from benchmark.models import Report, System, Task

from tests.benchmark.importers import assert_rejected, model_counts

pytestmark = pytest.mark.django_db

LUCIFERASE = "Luciferase Systems for In Vivo Imaging in Biology"
XAI = "Explainable Artificial Intelligence in Finance"
# (response_a_model, response_b_model, choice) as the release spells them.
PAIRS = [
    ("SciSage", "LLMxMapReduce_V2", "B_better"),
    ("LLMxMapReduce-V2", "AutoSurvey2", "Tie"),
    ("AutoSurvey2", "Autosurvey", "TIE"),
    ("Autosurvey", "SciSage", "A_better"),
]


def _text(system, topic, component, size=0):
    body = f"- [1] {topic}: a {component} by {system}\n- [2] Another work on {topic}\n"
    return body + "\nFiller sentence about the topic." * (size // 33)


def _records(topic, component, *, annotator="Annotator_CS_03", start=1000, size=0):
    return [
        {
            "id": str(start + i),
            "prompt": f"主题：{topic}的{component}",
            "response_a": _text("LLMxMapReduce-V2" if a.startswith("LLMx") else a, topic, component, size),
            "response_b": _text("LLMxMapReduce-V2" if b.startswith("LLMx") else b, topic, component, size),
            "mapping": {"response_a_model": a, "response_b_model": b},
            "annotator_id": annotator,
            "dataset_type": component,
            "choice": choice,
            "labeled_at": "2026-01-18T10:05:23.104Z",
        }
        for i, (a, b, choice) in enumerate(PAIRS)
    ]


@pytest.fixture
def labels(tmp_path):
    folder = tmp_path / "human_annotation"
    folder.mkdir()
    (folder / "Annotator_CS_03_reference_labels.json").write_text(
        json.dumps(_records(XAI, "reference") + _records(LUCIFERASE, "reference", start=2000), ensure_ascii=False,
                   indent=2), encoding="utf-8")
    (folder / "Annotator_CS_03_content_labels.json").write_text(
        json.dumps(_records(XAI, "content", start=3000), ensure_ascii=False, indent=2), encoding="utf-8")
    (folder / "README.txt").write_text("notes", encoding="utf-8")
    return folder


def test_list_form_label_files(labels):
    result = run_import("surveylens-annotations", labels)

    prefs = PairwisePreference.objects.filter(source="surveylens")
    assert prefs.count() == 3 * len(PAIRS)
    assert Counter(prefs.values_list("component", flat=True)) == {"reference": 8, "content": 4}
    assert Counter(prefs.values_list("choice", flat=True)) == {"right": 3, "tie": 6, "left": 3}
    # One topic, one task, whichever file (reference or content labels) introduced it.
    assert set(Task.objects.filter(protocol="surveylens").values_list("title", flat=True)) == {XAI, LUCIFERASE}
    xai = Task.objects.get(protocol="surveylens", title=XAI)
    assert xai.key == "explainable-artificial-intelligence-in-finance"
    assert xai.survey.discipline.name == "Computer Science"  # from the file name: Annotator_CS_03_...
    # LLMxMapReduce_V2 and LLMxMapReduce-V2 are one system; AutoSurvey2 and Autosurvey are two.
    assert set(System.objects.values_list("name", flat=True)) == {"SciSage", "LLMxMapReduce-V2", "AutoSurvey2",
                                                                  "Autosurvey"}
    first = prefs.get(external_id="1000")
    assert (first.report_left.system.name, first.report_right.system.name, first.choice) == (
        "SciSage", "LLMxMapReduce-V2", "right")
    # A report made from what the annotators saw: content, then references.
    report = Report.objects.get(task=xai, system__name="LLMxMapReduce-V2")
    assert report.text.index("a content by") < report.text.index("a reference by")
    assert AnnotatorProfile.objects.get(external_id="Annotator_CS_03").disciplines.get().name == "Computer Science"
    assert "human_annotation/README.txt: ignored (not a .json label file)" in result.messages
    assert "system 'LLMxMapReduce_V2' imported as 'LLMxMapReduce-V2' (system alias table, or the same name up to " \
           "case and separators)" in result.messages

    assert (first.shown_left, first.shown_right) == (_text("SciSage", XAI, "reference"),
                                                     _text("LLMxMapReduce-V2", XAI, "reference"))

    again = run_import("surveylens-annotations", labels)
    assert again.counts["preference"] == {"unchanged": 12}
    assert Report.objects.count() == 8


def test_system_outputs_and_label_files_share_the_topic_task(datasets, labels):
    run_import("surveylens", datasets / "surveylens/luciferase")
    task = Task.objects.get(protocol="surveylens", key="luciferase")
    scisage = Report.objects.get(task=task, system__name="SciSage")
    text = scisage.text

    result = run_import("surveylens-annotations", labels)

    assert result.counts["task"]["linked to an existing topic"] == 1
    assert Task.objects.filter(protocol="surveylens").count() == 2  # luciferase + the XAI topic
    luciferase_prefs = PairwisePreference.objects.filter(task=task)
    assert luciferase_prefs.count() == len(PAIRS)
    scisage.refresh_from_db()
    assert scisage.text == text  # the system's survey stays the report; the labels point at it
    first = luciferase_prefs.get(external_id="2000")
    assert first.report_left == scisage
    # What the annotator judged — SciSage's reference list, not its whole survey — is kept with the label.
    released = json.loads((labels / "Annotator_CS_03_reference_labels.json").read_text(encoding="utf-8"))[4]
    assert released["id"] == "2000"
    assert (first.shown_left, first.shown_right) == (released["response_a"], released["response_b"])
    assert first.shown_left not in scisage.text
    assert (f"human_annotation/Annotator_CS_03_reference_labels.json, [4]: SciSage's reference on {LUCIFERASE!r} as "
            "shown to annotators is not part of its report from luciferase/SciSage.json; the labels point at that "
            "report and keep the shown text with each preference" in result.messages)


def test_labels_first_then_system_outputs_link_to_the_same_task(datasets, labels, tmp_path):
    run_import("surveylens-annotations", labels)
    labelled = Task.objects.get(protocol="surveylens", title=LUCIFERASE)
    run_import("surveylens", datasets / "surveylens/luciferase")
    assert Task.objects.filter(protocol="surveylens").count() == 2
    labelled.refresh_from_db()
    assert labelled.survey.kind == "survey"  # the human-written survey replaced the topic-only one
    assert Report.objects.filter(task=labelled, system__name="SurveyForge").exists()


def test_a_label_file_over_the_line_limit_is_streamed(tmp_path):
    path = tmp_path / "Annotator_CS_07_content_labels.json"
    records = []
    for start in range(0, 36):  # each record carries two ~240 KB responses
        records += _records(XAI, "content", start=10_000 + start * 10, size=240_000)[:1]
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    assert path.stat().st_size > settings.IMPORT_MAX_LINE_BYTES == 16 * 1024 * 1024

    result = run_import("surveylens-annotations", path)
    assert result.counts["preference"] == {"created": 36}


def test_the_line_limit_applies_per_record(tmp_path, settings):
    settings.IMPORT_MAX_LINE_BYTES = 200_000
    path = tmp_path / "Annotator_CS_07_content_labels.json"
    records = _records(XAI, "content")  # small records: the file is read
    records[2] = _records(XAI, "content", start=50, size=400_000)[2]
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    assert_rejected("surveylens-annotations", path,
                    match=r"^Annotator_CS_07_content_labels\.json, field '\[2\]': longer than the 200,000-byte limit$")


def test_a_folder_with_one_bad_file_stores_nothing_and_names_it(labels):
    bad = labels / "Annotator_CS_03_content_labels.json"
    text = bad.read_text(encoding="utf-8")
    broken = text.replace('"dataset_type": "content",', '"dataset_type": "content",,', 1)
    bad.write_text(broken, encoding="utf-8")
    line = broken[: broken.index(",,") + 1].count("\n") + 1
    column = len(broken[: broken.index(",,") + 1].rsplit("\n", 1)[1]) + 1
    assert_rejected("surveylens-annotations", labels,
                    match=rf"^human_annotation/Annotator_CS_03_content_labels\.json, line {line}, column {column}: "
                          r"malformed JSON: unexpected symbol ','$")


@pytest.mark.parametrize(("change", "match"), [
    (lambda r: r[1].update(choice="maybe"), r"field '\[1\]\.choice': expected A_better, B_better or Tie, got 'maybe'"),
    (lambda r: r[0].pop("annotator_id"), r"field '\[0\]\.annotator_id': required field is missing"),
    (lambda r: r[3].update(prompt="主题：的content"), r"field '\[3\]\.prompt': the prompt names no topic"),
    (lambda r: r[0]["mapping"].update(response_b_model="LLMxMapReduce-V2", response_a_model="LLMxMapReduce_V2"),
     r"\[0\], field 'mapping': both responses are by LLMxMapReduce-V2 \(after the system alias table\)"),
])
def test_broken_list_records_name_file_record_and_field(tmp_path, change, match):
    records = _records(XAI, "content")
    change(records)
    path = tmp_path / "Annotator_CS_03_content_labels.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    before = model_counts()
    assert_rejected("surveylens-annotations", path, match=match)
    assert model_counts() == before


def test_a_list_file_must_name_its_discipline(tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(_records(XAI, "content")), encoding="utf-8")
    assert_rejected("surveylens-annotations", path,
                    match=r"^labels\.json: a list of label records names its discipline in the file name")


# --- the outline-label object (part_b, part_c), streamed like the list-form files -----------------


def _outline_object(records, *, annotator="Annotator_CS_07"):
    """Upstream's key order: part_c first, the annotator and discipline last."""
    return {"part_c": records,
            "part_b": [{"question_id": 1, "component": "outline", "aspect_name": "Formal Precision",
                        "selected_label": "B", "correct_label": "B"}],
            "annotator_id": annotator, "discipline": "Computer Science"}


def _outline_records(count, *, size=0, annotator="Annotator_CS_07"):
    records = []
    for i in range(count):
        record = _records(XAI, "outline", annotator=annotator, start=20_000 + i * 10, size=size)[i % len(PAIRS)]
        record["prompt"] = f"Topic: {XAI} — outline"
        records.append(record)
    return records


def test_an_outline_label_object_over_the_limit_is_streamed(tmp_path):
    path = tmp_path / "Annotator_CS_07_outline_labels.json"
    path.write_text(json.dumps(_outline_object(_outline_records(36, size=240_000)), ensure_ascii=False),
                    encoding="utf-8")
    assert path.stat().st_size > settings.IMPORT_MAX_LINE_BYTES == 16 * 1024 * 1024

    result = run_import("surveylens-annotations", path)
    assert result.counts["preference"] == {"created": 36}
    profile = AnnotatorProfile.objects.get(external_id="Annotator_CS_07")
    assert profile.qualification == _outline_object([])["part_b"]
    assert PairwisePreference.objects.filter(component="outline").count() == 36


def test_the_limit_applies_per_outline_record(tmp_path, settings):
    settings.IMPORT_MAX_LINE_BYTES = 200_000
    path = tmp_path / "Annotator_CS_07_outline_labels.json"
    records = _outline_records(4)
    records[2] = _outline_records(4, size=400_000)[2]
    path.write_text(json.dumps(_outline_object(records), ensure_ascii=False), encoding="utf-8")
    assert_rejected("surveylens-annotations", path,
                    match=r"^Annotator_CS_07_outline_labels\.json, field 'part_c\[2\]': longer than the "
                          r"200,000-byte limit$")


@pytest.mark.parametrize(("change", "match"), [
    (lambda d: d.pop("part_c"), r"field 'part_c': required field is missing"),
    (lambda d: d.update(part_c="none"), r"field 'part_c': expected a list, got str$"),
    (lambda d: d.update(part_b={"q": 1}), r"field 'part_b': expected a list, got dict$"),
    (lambda d: d["part_c"][1].update(choice="B"), r"field 'part_c\[1\]\.choice': expected A_better, B_better or Tie"),
    (lambda d: d["part_c"][0].update(annotator_id="Someone"),
     r"field 'part_c\[0\]\.annotator_id': record by 'Someone' in the file of 'Annotator_CS_07'"),
])
def test_broken_outline_objects_name_file_and_field(tmp_path, change, match):
    data = _outline_object(_outline_records(4))
    change(data)
    path = tmp_path / "Annotator_CS_07_outline_labels.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert_rejected("surveylens-annotations", path, match=rf"^Annotator_CS_07_outline_labels\.json, {match}")


def test_an_outline_object_with_no_records_stores_only_its_annotator(tmp_path):
    path = tmp_path / "Annotator_CS_07_outline_labels.json"
    path.write_text(json.dumps(_outline_object([])), encoding="utf-8")
    result = run_import("surveylens-annotations", path)
    assert "preference" not in result.counts
    assert AnnotatorProfile.objects.filter(external_id="Annotator_CS_07").exists()
