"""``make faults`` rows of misbehaving Batch API providers (``--only batch-providers``), each beside a
healthy batch run started after the bad one, on the same workers:

* ``malformed``: the provider's output file garbles five lines (``FakeBatchOpenAI.output_faults``:
  a response that is a string, half a line, a line without custom_id, a content that is a number, a
  repeated line) and adds one for a call nobody asked: the bad run finishes with only those calls
  failed, each named; the healthy run finishes with every call answered;
* ``huge``: the output file is 150 MiB (``pad_output_to``): refused by the cap with its reason on the
  run, every worker's peak RSS (``VmHWM``) under 300 MiB; the healthy run finishes;
* ``never``: the provider never ends the batch: the bad run waits (as it should, 24 h), the healthy
  run finishes, then the bad run is cancelled and its batch cancelled at the provider.

The providers are the test suite's ``FakeBatchOpenAI``, real HTTP servers in this process.
"""

from __future__ import annotations

import time

from .scenarios import RUN_SECONDS, TASKS, Row, evaluate, seed_runs, wait_settled
from .services import wait_until
from .stack import Stack

CALLS = TASKS * 2 * 2  # reports × checklist groups: one request line each
HUGE_BYTES = 150 * 2**20
RSS_LIMIT_MIB = 300
KINDS = ("malformed", "huge", "never")


def provider(kind: str):
    from tests.support.fake_batch import LINE_FAULTS, FakeBatchOpenAI
    from tests.support.fake_openai import labelled_checklist_responder

    options = {"malformed": dict(output_faults=LINE_FAULTS, auto_complete_after=2.0),
               "huge": dict(pad_output_to=HUGE_BYTES, auto_complete_after=2.0),
               "never": dict(never_finish=True),
               "healthy": dict(auto_complete_after=2.0)}[kind]
    server = FakeBatchOpenAI(**options)
    server.responder = labelled_checklist_responder
    return server


def batch_provider_fault(stack: Stack, broker: str, kind: str) -> list[Row]:
    data = seed_runs(stack)
    bad, good = provider(kind).start(), provider("healthy").start()
    try:
        return _scenario(stack, broker, kind, data, bad, good)
    finally:
        bad.stop()
        good.stop()


def _scenario(stack: Stack, broker: str, kind: str, data: dict, bad, good) -> list[Row]:
    started = time.monotonic()
    bad_run = evaluate(stack, data, f"bad-{kind}-{stack.name}", bad.base_url, batch=True)
    good_run = evaluate(stack, data, f"good-{kind}-{stack.name}", good.base_url, batch=True)
    good_status, good_seconds = wait_settled(stack, good_run)
    good_state = stack.probe("batch_state", run_id=good_run)
    good_ok = good_status == "finished" and good_state["calls"] == {"answered": CALLS}
    numbers = (f"healthy run (started second): {good_status} in {time.monotonic() - started:.0f} s, "
               f"calls {good_state['calls']}")
    if kind == "never":
        state = stack.probe("batch_state", run_id=bad_run)
        waiting = state["status"] == "running" and [s for _, s in state["batches"]] == ["in_progress"]
        stack.probe("run_cancel", run_id=bad_run)
        bad_status, _ = wait_settled(stack, bad_run, 120)
        wait_until(lambda: not bad.open_batches(), 60, "the never-ending batch cancelled at the provider")
        state = stack.probe("batch_state", run_id=bad_run)
        ok = waiting and bad_status == "cancelled" and [s for _, s in state["batches"]] == ["cancelled"]
        numbers += (f"; never-ending run: still waiting with its batch in progress when the healthy one finished: "
                    f"{waiting}; cancelled: {bad_status}, its batch {state['batches']}, at the provider "
                    f"{[b['status'] for b in bad.batches.values()]}")
        return [Row("provider never finishes a batch", broker,
                    "healthy run finishes; the stuck run waits, cancels cleanly", numbers, ok and good_ok)]
    bad_status, _ = wait_settled(stack, bad_run, RUN_SECONDS)
    state = stack.probe("batch_state", run_id=bad_run)
    if kind == "malformed":
        garbled = sorted(bad.garbled)
        named = all(error.startswith(("malformed batch output file: line",
                                      "no line of the batch's files answered this call (5 malformed line(s)"))
                    for error in state["call_errors"])
        ok = (bad_status == "finished_with_failures" and state["failed_ids"] == garbled and named
              and state["calls"] == {"answered": CALLS - len(garbled), "failed": len(garbled)})
        numbers += (f"; bad run: {bad_status}, calls {state['calls']}, failed = the {len(garbled)} garbled lines' "
                    f"calls: {state['failed_ids'] == garbled}, reasons: {' | '.join(state['call_errors'])[:400]}")
        return [Row("provider returns malformed batch lines", broker,
                    "only the garbled calls fail, named; healthy run unaffected", numbers, ok and good_ok)]
    peaks = stack.peak_rss_mib()
    peak = max(peaks.values()) if peaks else float("nan")
    refused = state["batch_errors"][:1] and state["batch_errors"][0].startswith("refused: the batch's output")
    ok = bad_status == "failed" and bool(refused) and peak < RSS_LIMIT_MIB and state["calls"] == {"failed": CALLS}
    numbers += (f"; bad run: {bad_status}, batch: {(state['batch_errors'] or [''])[0][:160]}; worker peak RSS "
                f"{', '.join(f'{h} {v:.0f} MiB' for h, v in sorted(peaks.items()))}")
    return [Row("provider returns a 150 MiB output file", broker,
                f"refused by the cap, workers < {RSS_LIMIT_MIB} MiB; healthy run unaffected", numbers, ok and good_ok)]
