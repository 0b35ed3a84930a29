"""The judge interface's sliding window: a stalled call never holds its neighbours' slots idle."""

import time

from scoring.judges import JudgeCall
from scoring.judges.openai_judge import OpenAIJudge
from scoring.models import JudgeConfig
from tests.support.fake_openai import FakeOpenAI, Reply, checklist_responder


def test_a_stalled_call_does_not_hold_the_other_slots_idle():
    with FakeOpenAI() as server:
        def responder(request) -> Reply:
            reply = checklist_responder(request)
            if "stall-me" in request.prompt:
                reply.hang = 1.5  # answered, but only after 1.5 s
            return reply

        server.responder = responder
        config = JudgeConfig(name="w", backend="openai", base_url=server.base_url, model="m", max_concurrency=2,
                             max_retries=0, timeout_seconds=5.0)
        calls = [JudgeCall("deepsynth.checklist_group", {
            "report": "stall-me" if i == 0 else f"report {i}", "group_name": "g", "constraint_question": "",
            "items": [{"id": i + 1, "text": f"item {i}"}]}) for i in range(8)]
        started = time.monotonic()
        order = [(index, time.monotonic() - started) for index, _ in OpenAIJudge(config).answer_as_completed(calls)]
        arrivals = [r.arrived - server.requests[0].arrived for r in server.requests]
    assert [index for index, _ in order][-1] == 0  # the stalled call came last...
    # ...while the seven others went through its neighbour slot
    assert all(at < 1.0 for index, at in order if index != 0)
    assert max(arrivals) < 1.0 and len(arrivals) == 8
