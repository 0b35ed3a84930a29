"""The offline heuristic judge: on the real DeepSynth task, on hand-made cases, and on every step's schema."""

import json

import pytest

from scoring.judges import STEPS, JudgeCall, judge_for, validate_answer
from scoring.judges import offline_judge
from scoring.judges.offline_judge import OfflineJudge
from scoring.models import JudgeConfig
from tests.scoring.judges.samples import SAMPLES

pytestmark = pytest.mark.django_db  # the judge reads and stores vectors in the embedding cache

CONFIG = JudgeConfig(name="offline", backend="offline")


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return judge_for(CONFIG)


def deepsynth_calls(task: dict) -> list[JudgeCall]:
    calls = []
    for group in task["checklist"]:
        items = [{"id": i, "text": requirement["content"]}
                 for i, requirement in enumerate((r for sub in group["sub_groups"] for r in sub["requirements"]), 1)]
        calls.append(JudgeCall("deepsynth.checklist_group", {
            "report": task["survey_result"], "group_name": group["group_name"],
            "constraint_question": group.get("detailed_prompt", "") if group["strict"] else "", "items": items}))
    return calls


def test_every_item_of_the_first_deepsynth_task_gets_a_verdict_and_reruns_agree(datasets):
    with open(datasets / "deepsynth-eval" / "example_gen_result.jsonl", encoding="utf-8") as lines:
        task = json.loads(next(lines))
    calls = deepsynth_calls(task)
    first = judge_for(CONFIG).answer_many(calls)

    for call, answer in zip(calls, first):
        assert answer.ok, answer.error
        assert [v["id"] for v in answer.data["verdicts"]] == [i["id"] for i in call.variables["items"]]
        assert {v["label"] for v in answer.data["verdicts"]} <= {"correct", "omitted", "incorrect"}
    assert sum(len(a.data["verdicts"]) for a in first) == 276

    offline_judge.MEMO = offline_judge._VectorMemo()  # nothing remembered in the process: vectors come from the cache
    again = judge_for(CONFIG)
    some = calls[:4]  # the general groups (54 items), one at a time and in the other order
    second = [again.answer(call) for call in reversed(some)][::-1]
    assert [a.data for a in second] == [a.data for a in first[:4]]


REPORT = """Semantic SLAM datasets

KITTI was published in 2012 and records urban driving with a Velodyne-64 LiDAR and stereo cameras.
TUM RGB-D provides 39 indoor sequences captured with a handheld Kinect camera and motion-capture ground truth.
ORB-SLAM2 is a keyframe-based visual SLAM system that supports monocular, stereo and RGB-D cameras.
Mask R-CNN extends Faster R-CNN with a mask branch for instance segmentation."""


def checklist(judge, *texts):
    answer = judge.answer(JudgeCall("deepsynth.checklist_group", {
        "report": REPORT, "group_name": "Datasets", "constraint_question": "",
        "items": [{"id": i, "text": t} for i, t in enumerate(texts, 1)]}))
    assert answer.ok, answer.error
    return {v["id"]: v for v in answer.data["verdicts"]}


def test_a_contradicted_number_is_incorrect_an_absent_topic_omitted_a_stated_fact_correct(judge):
    verdicts = checklist(
        judge,
        "In the dataset comparison table, report that KITTI was published in 2012.",
        "The article should mention that KITTI was published in 2015.",
        "The article should explain that TUM RGB-D provides 12 indoor sequences captured with a handheld camera.",
        "The article should discuss underwater sonar mapping for autonomous submarines in the deep ocean.",
        "The article should mention that ORB-SLAM2 supports monocular, stereo and RGB-D cameras.",
    )
    assert verdicts[1]["label"] == "correct" and "KITTI was published in 2012" in verdicts[1]["evidence"]
    assert verdicts[2]["label"] == "incorrect" and "2015 ≠ 2012" in verdicts[2]["rationale"]
    assert verdicts[3]["label"] == "incorrect" and "12 ≠ 39" in verdicts[3]["rationale"]
    assert verdicts[4]["label"] == "omitted"
    assert verdicts[5]["label"] == "correct"


def test_a_different_name_in_the_same_context_is_incorrect(judge):
    verdicts = checklist(judge, "The article should mention that Mask R-CNN extends YOLOv3 with a mask branch.")
    assert verdicts[1]["label"] == "incorrect", verdicts[1]


def test_thresholds_come_from_the_configuration():
    strict = OfflineJudge(JudgeConfig(name="strict", backend="offline",
                                      options={"support_similarity": 0.99, "strong_similarity": 0.99,
                                               "related_similarity": 0.99}))
    verdicts = checklist(strict, "The article should mention that ORB-SLAM2 supports monocular, stereo and RGB-D "
                                 "cameras.")
    assert verdicts[1]["label"] == "omitted"


@pytest.mark.parametrize("step", sorted(set(STEPS) - set(offline_judge.NOT_SUPPORTED)))
def test_every_supported_step_answers_in_its_schema(judge, step):
    answer = judge.answer(JudgeCall(step, SAMPLES[step]))
    assert answer.ok, answer.error
    assert validate_answer(step, answer.data, SAMPLES[step]) == []
    assert answer.extra["heuristic"] is True and answer.extra["request_hash"]


@pytest.mark.parametrize("step", sorted(offline_judge.NOT_SUPPORTED))
def test_steps_that_need_a_language_model_say_so(judge, step):
    answer = judge.answer(JudgeCall(step, SAMPLES[step]))
    assert not answer.ok and answer.error.startswith("not supported by the offline judge")


def test_reportbench_extraction_on_a_small_report(judge):
    cited = judge.answer(JudgeCall("reportbench.cited_statements", SAMPLES["reportbench.cited_statements"])).data
    assert {"text": "Semantic SLAM adds object labels to geometric maps.", "citations": ["[1]"]} in cited["statements"]
    kitti = next(s for s in cited["statements"] if s["text"].startswith("KITTI"))
    assert kitti["citations"] == ["https://www.cvlibs.net/datasets/kitti/"]
    uncited = judge.answer(JudgeCall("reportbench.uncited_statements", SAMPLES["reportbench.uncited_statements"])).data
    texts = [s["text"] for s in uncited["statements"]]
    assert "Mask R-CNN reached 37.1% mask AP on COCO in 2017." in texts
    assert not any("[1]" in t or "http" in t for t in texts)
    titles = judge.answer(JudgeCall("reportbench.reference_titles", SAMPLES["reportbench.reference_titles"])).data
    assert [r["title"] for r in titles["references"]] == [
        "Are we ready for autonomous driving? The KITTI vision benchmark suite",
        "ORB-SLAM2: an open-source SLAM system for monocular, stereo and RGB-D cameras"]
    assert titles["references"][1]["url"] == "https://arxiv.org/abs/1610.06475"


def test_support_and_relevance_decisions(judge):
    def ask(step, **variables):
        return judge.answer(JudgeCall(step, variables)).data

    assert ask("reportbench.consistency", statement="KITTI was published in 2012.",
               passage="The KITTI benchmark was published in 2012 by Geiger et al.")["label"] == "consistent"
    assert ask("reportbench.consistency", statement="KITTI was published in 2012.",
               passage="The KITTI benchmark was published in 2015 by Geiger et al.")["label"] == "inconsistent"
    assert ask("deepscholar.citation_support", sentence="Transformers rely on self-attention [3].",
               source="Cooking pasta takes ten minutes in salted water.")["label"] == "not_support"
    assert ask("deepscholar.relevance", query="semantic SLAM with object detection for robots",
               document="Semantic SLAM: object-level mapping for mobile robots")["grade"] >= 1
    assert ask("deepscholar.relevance", query="semantic SLAM with object detection for robots",
               document="A recipe for sourdough bread")["grade"] == 0
    labels = ask("deepscholar.nugget_support", **SAMPLES["deepscholar.nugget_support"])["labels"]
    assert labels == [{"id": "n1", "label": "support"}, {"id": "n2", "label": "not_support"}]


def test_construction_heuristics(judge):
    groups = judge.answer(JudgeCall("propose.topic_groups", SAMPLES["propose.topic_groups"])).data["groups"]
    assert [g["name"] for g in groups] == ["Datasets", "Systems"]
    assert groups[0]["items"] == ["The report should discuss Driving.", "The report should discuss Indoor."]
    pairs = judge.answer(JudgeCall("propose.constraint_pairs", SAMPLES["propose.constraint_pairs"])).data["pairs"]
    assert len(pairs) == 1
    assert pairs[0]["items"][0] == "In the table, report that KITTI has Year: 2012; Citations: 8651."
    prompts = judge.answer(JudgeCall("propose.reportbench_prompts", SAMPLES["propose.reportbench_prompts"])).data
    assert all("September 2022" in prompts[k] for k in ("sentence", "paragraph", "detail"))


def test_unknown_backends_are_refused():
    with pytest.raises(ValueError, match="unknown judge backend"):
        judge_for(JudgeConfig(name="x", backend="magic"))
