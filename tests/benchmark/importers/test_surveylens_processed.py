"""SurveyLens' published ``results/processed/<System>/<Discipline>/<file>_split.json`` tree, built here
from the real luciferase topic: each file goes where its ``metadata.source_file`` says it came from."""

import json
import shutil

import pytest

from annotation.models import PairwisePreference
from benchmark.importers.catalogue import run_import
from benchmark.importers.surveylens_processed import clean_name
from benchmark.models import Report, Survey, System, Task


pytestmark = pytest.mark.django_db

CYANO = "Cyanobacteria in Environmental Science"


@pytest.fixture
def repository(datasets, tmp_path):
    source = datasets / "surveylens/luciferase"
    processed = tmp_path / "SurveyLens/results/processed"
    for path in sorted(source.glob("*.json")):
        parts = json.loads(path.read_text(encoding="utf-8"))["metadata"]["source_file"].replace("\\", "/").split("/")
        target = processed / parts[-3] / parts[-2] / parts[-1]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    for system in ("SurveyForge", "LLMxMapReduce_V2"):  # a second topic, without a human-written survey
        target = processed / system / "Environmental Science" / f"{CYANO}_split.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads((source / "SurveyForge.json").read_text(encoding="utf-8"))
        data["outline"][0][1] = f"{CYANO} by {system}"
        target.write_text(json.dumps(data), encoding="utf-8")
    (processed / "SurveyX/Biology/notes.txt").write_text("run notes", encoding="utf-8")
    return tmp_path / "SurveyLens"


def test_clean_name():
    assert clean_name("10_Brightening_up_Biology-_Advances_in_Luciferase_Systems_for_i_20251225_151353_split") == \
        "Brightening up Biology- Advances in Luciferase Systems for i"
    assert clean_name("survey_Luciferase Systems for In Vivo Imaging in Biology_split") == \
        "Luciferase Systems for In Vivo Imaging in Biology"
    assert clean_name("Luciferase_Systems_for_In_Vivo_Imaging_in_Biology_paper_split") == \
        "Luciferase Systems for In Vivo Imaging in Biology"


def test_processed_tree(repository, datasets):
    result = run_import("surveylens", repository)

    tasks = Task.objects.filter(protocol="surveylens")
    assert sorted(tasks.values_list("extra__topic", flat=True)) == [CYANO, "Luciferase Systems for In Vivo Imaging in Biology"]
    luciferase = tasks.get(key="luciferase-systems-for-in-vivo-imaging-in-biology")
    # All seven systems (Gemini and Qwen named after the human title, cut short) on the one topic.
    assert sorted(Report.objects.filter(task=luciferase).values_list("system__name", flat=True)) == [
        "Autosurvey", "Gemini", "InteractiveSurvey", "Qwen", "SciSage", "SurveyForge", "SurveyX"]
    human = json.loads((datasets / "surveylens/luciferase/Human.json").read_text(encoding="utf-8"))
    assert luciferase.survey.kind == Survey.Kind.SURVEY and luciferase.survey.outline == human["outline"]
    assert luciferase.survey.discipline.name == "Biology"
    cyano = tasks.get(extra__topic=CYANO)
    assert cyano.survey.kind == Survey.Kind.TOPIC and cyano.survey.discipline.name == "Environmental Science"
    assert sorted(Report.objects.filter(task=cyano).values_list("system__name", flat=True)) == [
        "LLMxMapReduce-V2", "SurveyForge"]
    assert System.objects.filter(name__istartswith="llmxmapreduce").count() == 1

    rows = {row["system"]: row for row in result.system_rows()}
    assert rows["SurveyForge"]["reports"] == 2
    assert rows["SurveyX"]["skipped"] == [{"file": "results/processed/SurveyX/Biology/notes.txt",
                                           "reason": "not a .json file directly in Biology/"}]
    assert f"'{CYANO}' (Environmental Science): no human-written survey in Human/" in result.messages

    again = run_import("surveylens", repository / "results/processed")
    assert again.counts["report"] == {"unchanged": 9}


def test_label_files_link_to_the_processed_topic(repository, tmp_path):
    run_import("surveylens", repository)
    labels = tmp_path / "Annotator_EnvSci_01_content_labels.json"
    labels.write_text(json.dumps([{
        "id": "7", "prompt": f"主题：{CYANO}的content", "response_a": "A text", "response_b": "B text",
        "mapping": {"response_a_model": "SurveyForge", "response_b_model": "LLMxMapReduce_V2"},
        "annotator_id": "Annotator_EnvSci_01", "dataset_type": "content", "choice": "tie",
        "labeled_at": "2026-01-18T10:05:23.104Z",
    }], ensure_ascii=False), encoding="utf-8")
    run_import("surveylens-annotations", labels)
    preference = PairwisePreference.objects.get()
    assert preference.task == Task.objects.get(extra__topic=CYANO)
    assert Task.objects.filter(protocol="surveylens").count() == 2
    assert preference.report_right.system.name == "LLMxMapReduce-V2"
    assert preference.report_right.source_path.endswith(f"LLMxMapReduce_V2/Environmental Science/{CYANO}_split.json")


def test_two_files_of_one_system_on_one_topic_are_reported(repository):
    folder = repository / "results/processed/SurveyForge/Biology"
    shutil.copy(folder / "Luciferase Systems for In Vivo Imaging in Biology_split.json",
                folder / "survey_Luciferase Systems for In Vivo Imaging in Biology_split.json")
    result = run_import("surveylens", repository)

    skipped = {row["system"]: row["skipped"] for row in result.system_rows()}["SurveyForge"]
    assert skipped == [{
        "file": "results/processed/SurveyForge/Biology/survey_Luciferase Systems for In Vivo Imaging in Biology_split.json",
        "reason": "a second SurveyForge survey on 'Luciferase Systems for In Vivo Imaging in Biology'; "
                  "results/processed/SurveyForge/Biology/Luciferase Systems for In Vivo Imaging in Biology_split.json "
                  "was read"}]
    assert Report.objects.filter(system__name="SurveyForge").count() == 2


def test_bad_files_in_the_tree_are_skipped_and_named(repository):
    bad = repository / "results/processed/SciSage/Biology/Luciferase_Systems_for_In_Vivo_Imaging_in_Biology_paper_split.json"
    bad.write_text('{"outline": [[1, "x"]],\n "content": [}', encoding="utf-8")
    (repository / "results/processed/SciSage/Astrology").mkdir()
    (repository / "results/processed/SciSage/Astrology/Stars_split.json").write_text("{}", encoding="utf-8")

    result = run_import("surveylens", repository)

    skipped = {row["system"]: row["skipped"] for row in result.system_rows()}["SciSage"]
    assert {"file": "results/processed/SciSage/Biology/Luciferase_Systems_for_In_Vivo_Imaging_in_Biology_paper_split.json",
            "reason": "unreadable: line 2, column 14: malformed JSON: expecting value"} in skipped
    assert skipped[0]["file"] == "results/processed/SciSage/Astrology/Stars_split.json"
    assert skipped[0]["reason"].startswith("Astrology/ is not a SurveyLens discipline (known: Biology, ")
    assert not Report.objects.filter(system__name="SciSage").exists()
    assert Report.objects.filter(system__name="SurveyForge").count() == 2
