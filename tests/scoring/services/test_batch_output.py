"""Batch output files from a misbehaving provider (``scoring.judges.batch_output``, ``batches._files_read``,
``batches.batches_poll``): a malformed, unknown or repeated line fails only its own call; one run's trouble
never stalls another; a huge file is refused by the cap at bounded memory. Against ``FakeBatchOpenAI``
(a loopback HTTP server) with ``output_faults`` / ``pad_output_to``."""

import json
import os
import subprocess
import sys
from io import StringIO

import pytest
from django.db import connection
from django.test import override_settings

from scoring.judges.batch_output import LINE_MAX_BYTES, OutputTooLarge, line_read, lines_split, output_cap
from scoring.models import BatchCall, EvaluationRun, JudgeBatch, Verdict
from scoring.selectors import run_failure_reasons
from scoring.services import batches
from scoring.services.batches import POLL_FAILED, batches_poll
from scoring.services.run_finish import run_finalize
from scoring.services.runs import run_resume
from tests.scoring.services.test_runs_batch import KEY, VERDICTS, batch_config, execute_pending, material, started  # noqa: F401
from tests.support.fake_batch import LINE_FAULTS, FakeBatchOpenAI
from tests.support.fake_openai import labelled_checklist_responder

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def two_servers():
    with FakeBatchOpenAI(output_faults=LINE_FAULTS) as bad, FakeBatchOpenAI() as good:
        bad.responder = good.responder = labelled_checklist_responder
        with override_settings(JUDGE_ENDPOINTS={bad.base_url: KEY, good.base_url: KEY}):
            yield bad, good


def settle(run) -> EvaluationRun:
    """Execute what the polls release until the run has nothing waiting, then finalize it."""
    for _ in range(6):
        execute_pending(run)
        if not run.jobs.filter(status__in=("waiting", "pending")).exists():
            break
        batches_poll(run_id=run.pk)
    return run_finalize(run=run)


# --- lines, one at a time ---------------------------------------------------------------------------------------


def good_line(custom_id="abc", content='{"x": 1}') -> bytes:
    return json.dumps({"id": "r1", "custom_id": custom_id, "error": None, "response": {
        "status_code": 200, "request_id": "q", "body": {"choices": [{"message": {"content": content}}],
                                                        "usage": {"prompt_tokens": 7, "completion_tokens": 3}}}}).encode()


def test_a_well_formed_line_is_its_call_s_answer():
    line = line_read(1, good_line())
    assert (line.custom_id, line.content, line.tokens_in, line.tokens_out, line.error) == ("abc", '{"x": 1}', 7, 3, "")


@pytest.mark.parametrize("raw, custom_id, what", [
    (b'{"custom_id": "abc", "response": "oops"}', "abc", "line 4 has a response that is not an object"),
    (b'{"custom_id": "abc", "respo', "", "line 4 is not JSON"),
    (b'[1, 2]', "", "line 4 is not a JSON object"),
    (b'{"response": {}}', "", "line 4 has no custom_id naming a request"),
    (good_line(content=None).replace(b'null', b'42', 1).replace(b'"error": 42', b'"error": null'), "abc", None),
    (b'{"custom_id": "abc", "response": {"status_code": "200", "body": {}}}', "abc",
     "line 4 has a response without an integer status_code"),
    (b'{"custom_id": "abc", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": 5}}]}}}',
     "abc", "line 4 has a message content that is not text"),
    (b'{"custom_id": "abc", "response": {"status_code": 200, "body": {"choices": [{}]}}}', "abc",
     "line 4 has a first choice without a message object"),
    (b'{"custom_id": "abc", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "a"}}], '
     b'"usage": {"prompt_tokens": -1}}}}', "abc", "line 4 has token counts that are not whole numbers"),
    (b'{"custom_id": "abc", "response": null, "error": null}', "abc", "line 4 has neither a response nor an error"),
])
def test_a_malformed_line_is_named_and_fails_only_the_call_it_names(raw, custom_id, what):
    line = line_read(4, raw, "output")
    if what is None:  # content null: an empty answer, which the judge's parser then refuses as any online one
        assert line.content == "" and not line.malformed
        return
    assert line.malformed and line.custom_id == custom_id
    assert line.error == f"malformed batch output file: {what}"


def test_a_line_s_error_reads_as_an_online_call_s():
    raw = b'{"custom_id": "abc", "response": {"status_code": 400, "body": {"error": {"message": "no json mode"}}}}'
    assert line_read(1, raw).error == "HTTP 400: no json mode"
    raw = b'{"custom_id": "abc", "response": null, "error": {"code": "batch_expired", "message": "not run"}}'
    assert line_read(1, raw).error == "batch error: not run"
    assert line_read(2, b"   ") is None


def test_lines_are_split_across_chunks_with_an_oversized_line_dropped_as_it_streams():
    chunks = [b"ab", b"c\nde", b"f\n", b"x" * 10, b"y" * 10, b"\ng", b"h"]
    assert list(lines_split(iter(chunks), budget=[1000], line_max=8)) == [b"abc", b"def", None, b"gh"]
    assert list(lines_split(iter([b"a\n", b"zzzzzzzzzzzz"]), budget=[1000], line_max=8)) == [b"a", None]
    assert line_read(3, None).error == f"malformed batch output file: line 3 is longer than {LINE_MAX_BYTES // 2**20} MiB"


def test_a_stream_past_its_budget_is_refused():
    budget = [10]
    found = lines_split(iter([b"abc\n", b"defgh\n", b"ijk\n"]), budget=budget)
    assert next(found) == b"abc" and next(found) == b"defgh"
    with pytest.raises(OutputTooLarge):
        next(found)


def test_the_cap_grows_with_the_request_lines_and_their_max_tokens():
    assert output_cap(10) == 4 * 2**20 + 10 * 256 * 1024
    assert output_cap(10, max_tokens=100_000) == 4 * 2**20 + 10 * (24 * 100_000 + 16 * 1024)
    assert output_cap(0) == output_cap(1)


# --- runs ------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_malformed_lines_fail_only_their_calls_and_a_healthy_run_started_after_finishes_unaffected(two_servers,
                                                                                                   material):
    bad_server, good_server = two_servers
    bad = started(material, batch_config(bad_server, name="bad-endpoint"))
    good = started(material, batch_config(good_server, name="good-endpoint"))
    assert set(execute_pending(bad)) == set(execute_pending(good)) == {"waiting"}
    assert batches_poll()["submitted"] == 2  # both runs, in one poll: started in that order
    bad_server.finish()
    good_server.finish()
    polled = batches_poll()  # nothing escapes, both read back
    assert polled["checked"] == 2 and "failed" not in polled

    good = settle(good)
    assert (good.status, good.error) == ("finished", "")
    assert Verdict.objects.filter(judge_config=good.judge_config, error="").count() == VERDICTS

    bad = settle(bad)
    assert bad.status == "finished_with_failures"
    batch = JudgeBatch.objects.get(run=bad)
    assert batch.status == "completed"
    garbled = bad_server.garbled  # response-string, not-json, no-custom-id, content-number, duplicate
    assert len(garbled) == 5
    failed = dict(BatchCall.objects.filter(run=bad, status="failed").values_list("custom_id", "error"))
    assert set(failed) == set(garbled)  # only those calls failed, every other one answered
    assert BatchCall.objects.filter(run=bad, status="answered").count() == 12 - 5
    by_fault = {garbled[custom_id]: error for custom_id, error in failed.items()}
    assert by_fault["response-string"] == "malformed batch output file: line 1 has a response that is not an object"
    assert by_fault["content-number"] == "malformed batch output file: line 4 has a message content that is not text"
    assert by_fault["duplicate"] == ("malformed batch output file: line 6 repeats the call of output file line 5; "
                                     "neither answer is used")
    # lines that name no call of ours (not-json, no custom_id) cannot be tied to one: their calls end unanswered
    assert by_fault["not-json"].startswith("no line of the batch's files answered this call (")
    assert "5 malformed line(s), each failing only its own call" in batch.error
    assert "1 line(s) naming no call of this batch, ignored" in batch.error
    # named where a person looks: the run page's reasons and evaluate's summary
    reasons = {row["reason"] for row in run_failure_reasons(run=bad)}
    assert any("line 1 has a response that is not an object" in reason for reason in reasons)
    out = StringIO()
    from scoring.management.commands.evaluate import Command, print_run_summary
    print_run_summary(Command(stdout=out), bad)
    assert "has a response that is not an object" in out.getvalue()
    # the verdicts of the healthy calls of the bad run are the healthy run's
    good_rows = set(Verdict.objects.filter(judge_config=good.judge_config).values_list("report_id", "target_id", "label"))
    bad_rows = set(Verdict.objects.filter(judge_config=bad.judge_config, error="").values_list("report_id", "target_id",
                                                                                              "label"))
    assert bad_rows and bad_rows <= good_rows

    # Resume asks again for those calls only, and the provider, behaving now, answers them
    bad_server.output_faults = ()
    run_resume(run=bad)
    execute_pending(bad)
    batches_poll(run_id=bad.pk)
    assert sorted(line["custom_id"] for line in bad_server.batch_lines[sorted(bad_server.batch_lines)[-1]]) == \
        sorted(garbled)
    bad_server.finish()
    bad = settle(bad)
    assert (bad.status, bad.error) == ("finished", "")


@pytest.mark.django_db
def test_one_run_s_poll_raising_is_recorded_on_it_and_the_others_are_polled(two_servers, material, monkeypatch):
    bad_server, good_server = two_servers
    bad = started(material, batch_config(bad_server, name="bad-endpoint"))
    good = started(material, batch_config(good_server, name="good-endpoint"))
    execute_pending(bad)
    execute_pending(good)
    batches_poll()
    bad_server.finish()
    good_server.finish()
    real = batches._batch_check

    def check(client, batch):
        if batch.run_id == bad.pk:
            raise AttributeError("'str' object has no attribute 'get'")  # the bug this guards against
        return real(client, batch)

    monkeypatch.setattr(batches, "_batch_check", check)
    polled = batches_poll()
    assert polled["failed"] == 1 and polled["checked"] == 1
    bad.refresh_from_db()
    assert bad.status == "running"
    assert bad.error == f"{POLL_FAILED}: AttributeError: 'str' object has no attribute 'get' (tried again at the next poll)"
    assert settle(good).status == "finished"
    monkeypatch.setattr(batches, "_batch_check", real)
    batches_poll()
    bad.refresh_from_db()
    assert bad.error == ""  # a poll that works clears it
    assert settle(bad).status == "finished_with_failures"


@pytest.mark.django_db
def test_a_huge_output_file_is_refused_by_the_cap_and_the_run_still_finishes(material):
    with FakeBatchOpenAI(pad_output_to=30 * 2**20) as server, \
            override_settings(JUDGE_ENDPOINTS={server.base_url: KEY}):
        server.responder = labelled_checklist_responder
        run = started(material, batch_config(server))
        execute_pending(run)
        batches_poll(run_id=run.pk)
        server.finish()
        assert batches_poll(run_id=run.pk)["checked"] == 1
        batch = JudgeBatch.objects.get(run=run)
        cap = output_cap(12)
        assert batch.status == "failed"
        assert batch.error == (f"refused: the batch's output and error files pass {cap / 2**20:.1f} MiB, the most 12 "
                               "request line(s) may return; resume the run to ask again")
        assert set(BatchCall.objects.filter(run=run).values_list("status", "error")) == {("failed", batch.error)}
        run = settle(run)
        assert run.status == "failed" and "refused: the batch's output" in run.error  # every call refused


def _subprocess_environment(server) -> dict:
    db = connection.settings_dict
    return dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings_test", JUDGE_ENDPOINTS=f"{server.base_url}=SES_KEY",
                SES_KEY=KEY, DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
                LOG_LEVEL="WARNING")


# peak RSS as /proc says (VmHWM, this process's own memory since exec: ``ru_maxrss`` would carry the forking
# test process's peak over exec)
POLL_AND_MEASURE = """
import re, sys
import django
django.setup()
from scoring.models import EvaluationRun
from scoring.services.batches import run_batches_poll
print(run_batches_poll(run=EvaluationRun.objects.get(pk=int(sys.argv[1])), enqueue=False))
print("peak-rss-kib", re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("max_tokens, expect", [(None, "failed"), (600_000, "completed")])
def test_a_150_mb_output_file_is_read_by_a_poller_under_300_mb(material, max_tokens, expect):
    """The poller in a process of its own (as a worker's), its peak RSS measured: the file refused by the
    cap (12 lines), or, with a ``max_tokens`` that allows it, streamed through whole."""
    if connection.vendor != "postgresql":
        pytest.skip("the poller's process reaches the test database over PostgreSQL")
    with FakeBatchOpenAI(pad_output_to=150 * 2**20) as server, \
            override_settings(JUDGE_ENDPOINTS={server.base_url: KEY}):
        server.responder = labelled_checklist_responder
        options = {"max_tokens": max_tokens} if max_tokens else {}
        run = started(material, batch_config(server, options=options))
        execute_pending(run)
        batches_poll(run_id=run.pk)
        server.finish()
        assert len(server.files[JudgeBatch.objects.get(run=run) and server.batches[
            JudgeBatch.objects.get(run=run).batch_id]["output_file_id"]]) >= 150 * 2**20
        done = subprocess.run([sys.executable, "-c", POLL_AND_MEASURE, str(run.pk)], cwd=ROOT, capture_output=True,
                              text=True, timeout=300, env=_subprocess_environment(server))
        assert done.returncode == 0, done.stderr[-2000:]
        peak_mib = int(done.stdout.split("peak-rss-kib")[1]) / 1024
        print(f"poller peak RSS reading a 150 MB output file ({expect}): {peak_mib:.0f} MiB")
        assert peak_mib < 300
        assert JudgeBatch.objects.get(run=run).status == expect
        if expect == "completed":
            assert BatchCall.objects.filter(run=run, status="answered").count() == 12
