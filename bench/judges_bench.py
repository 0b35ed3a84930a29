"""Judge and embedding throughput: offline embeddings, and the openai judge against a loopback server.

* ``embed 1,000 sentences offline``: all-MiniLM-L6-v2 in NumPy over 1,000 distinct real
  sentences (DeepSynth checklist items and report sentences, 37 tokens on average),
  model already loaded. The target is 20 s, not 10: the six layers cost 21 MFLOP per
  token, 0.78 TFLOP for these 36,680 tokens, which one core (OpenBLAS sgemm measured
  at ~70 GFLOPS here) cannot do in under ~11 s; sentence-transformers on torch, one
  thread, took the same time on the same machine (16.8 s vs 16.5 s).
* ``100 checklist groups via openai judge``: the real ``openai`` client against
  ``tests.support.fake_openai`` answering every request after 200 ms, with
  ``max_concurrency`` 8; the target is the ideal ``calls × latency / concurrency``
  (2.5 s) plus 20 %.
"""

import atexit
import json

from bench import bench_dataset

CALLS, LATENCY, CONCURRENCY = 100, 0.2, 8
_servers: list = []


def _real_sentences(count: int) -> list[str]:
    from scoring.judges import lexical

    path = bench_dataset("deepsynth-eval/example_gen_result.jsonl")
    texts: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        texts += [r["content"] for g in task["checklist"] for sub in g["sub_groups"] for r in sub["requirements"]]
        texts += list(lexical.split_sentences(task["survey_result"]))
    unique = list(dict.fromkeys(texts))
    i = 0
    while len(unique) < count:  # pad with variants if the data ever shrinks
        unique.append(f"{unique[i % len(unique)]} (variant {i})")
        i += 1
    return unique[:count]


def embed_offline():
    from scoring.embeddings import embedder_for

    embedder = embedder_for("local")
    embedder.embed(["warm up"])
    sentences = _real_sentences(1000)

    def run():
        vectors = embedder.embed(sentences)
        assert vectors.shape == (1000, 384)

    return run


def _stop_servers() -> None:
    while _servers:
        _servers.pop().stop()


def checklist_groups_via_openai_judge():
    from scoring.judges import JudgeCall, judge_for
    from scoring.models import JudgeConfig
    from tests.support.fake_openai import FakeOpenAI, checklist_responder

    _stop_servers()
    server = FakeOpenAI(latency=LATENCY).start()
    server.responder = checklist_responder
    _servers.append(server)
    config = JudgeConfig(name="bench", backend="openai", base_url=server.base_url, model="fake-judge",
                         max_concurrency=CONCURRENCY, max_retries=2, timeout_seconds=10)
    judge = judge_for(config)
    calls = [JudgeCall("deepsynth.checklist_group", {
        "report": "A report about semantic SLAM. " * 200, "group_name": f"group {g}", "constraint_question": "",
        "items": [{"id": i, "text": f"Requirement {i} of group {g}."} for i in range(1, 16)]}) for g in range(CALLS)]

    def run():
        answers = judge.answer_many(calls)
        assert all(a.ok for a in answers), [a.error for a in answers if not a.ok][:3]
        assert server.max_in_flight <= CONCURRENCY

    return run


atexit.register(_stop_servers)

BENCHMARKS = [
    ("embed 1,000 sentences offline (all-MiniLM-L6-v2, NumPy)", 20.0, embed_offline),
    (f"{CALLS} checklist groups via openai judge, {LATENCY * 1000:.0f} ms latency, concurrency {CONCURRENCY}",
     CALLS * LATENCY / CONCURRENCY * 1.2, checklist_groups_via_openai_judge),
]
