"""The openai backend over real HTTP: the real ``openai`` client against the scripted loopback server."""

import json
import logging
import threading
import time

import pytest

from scoring.judges import STEPS, JudgeCall, judge_for, record_call
from scoring.judges.openai_judge import OpenAIJudge
from scoring.models import JudgeConfig, LLMCall
from tests.support.fake_openai import FakeOpenAI, Reply, checklist_responder

ITEMS = [{"id": 1, "text": "KITTI was published in 2012."}, {"id": 2, "text": "ORB-SLAM2 runs on a CPU."}]
GOOD = {"verdicts": [{"id": 1, "label": "correct", "evidence": "e", "rationale": "r"},
                     {"id": 2, "label": "omitted", "evidence": "", "rationale": "r"}]}


def make_config(server, **overrides) -> JudgeConfig:
    fields = dict(name="fake", backend="openai", base_url=server.base_url, model="fake-judge", temperature=0.0,
                  max_retries=3, timeout_seconds=2.0, max_concurrency=4, price_input_per_million=2.0,
                  price_output_per_million=8.0,
                  options={"backoff_base_seconds": 0.01, "backoff_max_seconds": 0.05})
    fields.update(overrides)
    return JudgeConfig(**fields)


def group_call(items=ITEMS, name="Datasets") -> JudgeCall:
    return JudgeCall("deepsynth.checklist_group", {"report": "KITTI (2012) is a driving dataset.",
                                                   "group_name": name, "constraint_question": "", "items": items})


def test_a_good_answer_carries_usage_cost_latency_and_is_recorded(fake_openai, db):
    fake_openai.script(Reply.json(GOOD, tokens_in=1200, tokens_out=300))
    config = make_config(fake_openai)
    config.save()
    judge = judge_for(config)
    assert isinstance(judge, OpenAIJudge) and not judge.heuristic

    answer = judge.answer(group_call())

    assert answer.ok, answer.error
    assert answer.data == GOOD
    assert (answer.tokens_in, answer.tokens_out, answer.attempts) == (1200, 300, 1)
    assert answer.cost_usd == pytest.approx((1200 * 2.0 + 300 * 8.0) / 1e6)
    assert answer.latency_ms > 0 and answer.model == "fake-judge"
    request = fake_openai.chat_requests()[0]
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["temperature"] == 0.0 and request.body["model"] == "fake-judge"
    assert "KITTI was published in 2012." in request.prompt

    row = record_call(answer, judge_config=config, step="deepsynth.checklist_group")
    row = LLMCall.objects.get(pk=row.pk)
    assert (row.ok, row.tokens_in, row.tokens_out, row.attempts, row.prompt_version) == (True, 1200, 300, 1, "v1")
    assert row.cost_usd == pytest.approx(answer.cost_usd) and row.request_hash == answer.extra["request_hash"]


def test_one_call_judges_a_whole_group(fake_openai):
    fake_openai.responder = checklist_responder
    items = [{"id": i, "text": f"item {i}"} for i in range(1, 13)]
    answer = judge_for(make_config(fake_openai)).answer(group_call(items))
    assert answer.ok and len(answer.data["verdicts"]) == 12
    assert len(fake_openai.chat_requests()) == 1


def test_429_with_retry_after_is_honoured(fake_openai):
    fake_openai.script(Reply.error(429, "slow down", retry_after="0.4"), Reply.json(GOOD))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert answer.ok and answer.attempts == 2 and answer.extra["retries"] == 1
    first, second = fake_openai.chat_requests()
    assert second.arrived - first.arrived >= 0.4


def test_500_then_success(fake_openai):
    fake_openai.script(Reply.error(500), Reply.error(503), Reply.json(GOOD))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert answer.ok and answer.attempts == 3


def test_a_hung_request_times_out_and_is_retried(fake_openai):
    fake_openai.script(Reply.hang_for(3.0), Reply.json(GOOD))
    started = time.monotonic()
    answer = judge_for(make_config(fake_openai, timeout_seconds=0.5)).answer(group_call())
    assert answer.ok and answer.attempts == 2
    assert time.monotonic() - started < 2.5


def test_exhausted_retries_give_an_error_answer_not_an_exception(fake_openai):
    fake_openai.script(*[Reply.error(502, "bad gateway")] * 4)
    answer = judge_for(make_config(fake_openai, max_retries=3)).answer(group_call())
    assert not answer.ok and answer.data is None
    assert "gave up after 4 attempts" in answer.error and "502" in answer.error
    assert answer.attempts == 4 and len(fake_openai.chat_requests()) == 4


def test_client_errors_are_not_retried(fake_openai):
    fake_openai.script(Reply.error(401, "bad key"))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert not answer.ok and "401" in answer.error and len(fake_openai.chat_requests()) == 1


def test_a_retry_after_beyond_the_limit_stops_retrying(fake_openai):
    fake_openai.script(Reply.error(429, retry_after="3600"))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert not answer.ok and "3600" in answer.error and len(fake_openai.chat_requests()) == 1


def test_malformed_json_gets_one_repair_round(fake_openai):
    fake_openai.script(Reply.text('{"verdicts": [ oops', tokens_in=10, tokens_out=5), Reply.json(GOOD, tokens_in=20))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert answer.ok and answer.data == GOOD
    assert answer.extra["repairs"] == 1 and answer.attempts == 2 and answer.tokens_in == 30
    repair = fake_openai.chat_requests()[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"verdicts": [ oops'}
    assert "not valid JSON" in repair[-1]["content"]


def test_malformed_twice_is_an_error_with_the_reason(fake_openai):
    fake_openai.script(Reply.text("Sure! Here are the verdicts."), Reply.text("```json\n[1, 2]\n```"))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert not answer.ok
    assert "invalid answer after one repair" in answer.error and "not an object" in answer.error
    assert answer.raw == "```json\n[1, 2]\n```" and len(fake_openai.chat_requests()) == 2


def test_a_missing_id_is_repaired(fake_openai):
    fake_openai.script(Reply.json({"verdicts": GOOD["verdicts"][:1]}), Reply.json(GOOD))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert answer.ok and answer.extra["first_problems"] == ["ids not answered: 2"]
    assert "ids not answered: 2" in fake_openai.chat_requests()[1].last_message


def test_a_bad_label_twice_keeps_the_item_list_and_names_the_field(fake_openai):
    """The list survives for the pipeline to keep the valid items (``parse_group_answer`` fails the bad one)."""
    wrong = {"verdicts": [GOOD["verdicts"][0], dict(GOOD["verdicts"][1], label="partly")]}
    fake_openai.script(Reply.json(wrong), Reply.json(wrong))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert answer.ok and answer.data == wrong
    assert answer.extra["answer_problems"] == [
        "answer at verdicts/1/label: 'partly' is not one of ['correct', 'omitted', 'incorrect']"]
    assert len(fake_openai.chat_requests()) == 2  # the one repair round was asked


def test_a_reply_without_the_item_list_twice_is_an_error_naming_the_field(fake_openai):
    fake_openai.script(Reply.json({"verdict": []}), Reply.json({"verdicts": "none"}))
    answer = judge_for(make_config(fake_openai)).answer(group_call())
    assert not answer.ok and "answer at verdicts" in answer.error and "'none' is not of type 'array'" in answer.error


def test_an_endpoint_without_json_mode_is_asked_again_without_it(fake_openai, caplog):
    fake_openai.script(Reply.error(400, "response_format is not supported"), Reply.json(GOOD), Reply.json(GOOD))
    judge = judge_for(make_config(fake_openai))
    with caplog.at_level(logging.WARNING, logger="scoring.judges.openai_judge"):
        assert judge.answer(group_call()).ok
        assert judge.answer(group_call()).ok
    [warning] = [r.getMessage() for r in caplog.records if r.name == "scoring.judges.openai_judge"]
    assert warning.endswith("refused JSON mode (HTTP 400): its answers are asked for as plain text from now on")
    first, second, third = fake_openai.chat_requests()
    assert "response_format" in first.body
    assert "response_format" not in second.body and "response_format" not in third.body


def test_answer_many_keeps_input_order(fake_openai):
    def echo(request):
        statement = request.prompt.split("Statement: ")[1].split("\n")[0]
        time.sleep(0.05 * (5 - int(statement[1:]) % 5))  # later calls finish first
        return Reply.json({"label": "correct", "rationale": statement})

    fake_openai.responder = echo
    calls = [JudgeCall("reportbench.factuality", {"statement": f"s{i}"}) for i in range(10)]
    answers = judge_for(make_config(fake_openai, max_concurrency=5)).answer_many(calls)
    assert [a.data["rationale"] for a in answers] == [f"s{i}" for i in range(10)]


def test_the_concurrency_limit_is_shared_by_judges_on_one_endpoint():
    with FakeOpenAI(latency=0.15) as server:
        server.responder = checklist_responder
        judges = [judge_for(make_config(server, max_concurrency=2)) for _ in range(2)]
        calls = [group_call(name=f"g{i}") for i in range(6)]
        threads = [threading.Thread(target=judge.answer_many, args=(calls,)) for judge in judges]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(server.chat_requests()) == 12
        assert server.max_in_flight == 2


def test_injected_faults_are_absorbed_by_retries():
    with FakeOpenAI(fault_rate=0.3, seed=7) as server:
        server.responder = checklist_responder
        calls = [group_call(name=f"g{i}") for i in range(20)]
        answers = judge_for(make_config(server, max_retries=6, max_concurrency=4)).answer_many(calls)
        assert all(a.ok for a in answers)
        assert sum(a.attempts for a in answers) == len(server.chat_requests()) > 20


def test_invalid_variables_and_unknown_steps_never_reach_the_endpoint(fake_openai):
    judge = judge_for(make_config(fake_openai))
    assert "unknown step" in judge.answer(JudgeCall("nope.step", {})).error
    assert "invalid variables" in judge.answer(JudgeCall("reportbench.factuality", {"claim": "x"})).error
    assert fake_openai.requests == []


def test_messages_carry_the_schema_and_the_versioned_prompt(fake_openai):
    fake_openai.script(Reply.json(GOOD))
    judge_for(make_config(fake_openai)).answer(group_call())
    system, user = fake_openai.chat_requests()[0].body["messages"]
    schema = json.loads(system["content"].split("(task `deepsynth.checklist_group`):")[1])
    assert schema == STEPS["deepsynth.checklist_group"].schema
    assert '{"id": 2, "text": "ORB-SLAM2 runs on a CPU."}' in user["content"]
