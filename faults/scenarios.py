"""The scenarios of ``make faults``; each returns table rows and never raises for a finding.

* a worker killed with -9 mid-run: the run finishes with no manual action, with the verdicts and
  score cards of an uninterrupted run over the same reports, and no duplicate verdict;
* the broker silent, or unreachable, when a run starts through the API: a JSON 503 within 5 s
  (and ``/healthz`` says so), then the run completes by itself once the broker is back;
* PostgreSQL restarted mid-run: the run finishes, as above;
* a full disk while a worker writes an export: the job fails saying so, no file is left;
* 50 annotators over the API while the whole gunicorn process group is killed with -9 and
  started again: every label answered 201 is stored, no duplicate, nothing over-assigned, no
  5xx outside the restart window;
* a batch-mode run whose every worker is killed with -9 while its batch is pending at the endpoint
  (the orchestrator's in-process ``FakeBatchOpenAI``): once the batch ends, the next workers poll it,
  read it back and finish the run — one batch, every call answered once, = uninterrupted run.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass

from .services import TcpProxy, wait_until
from .stack import Stack

RUN_SECONDS = 240
TASKS = 8  # x 2 systems: 16 reports, one job each, two judge calls per job
ANSWER_WITHIN = 5.0


@dataclass
class Row:
    scenario: str
    broker: str
    checked: str
    numbers: str
    ok: bool


# --- runs -------------------------------------------------------------------------------------


def seed_runs(stack: Stack) -> dict:
    """The reports every run of this stack evaluates (seeded once: each run has its own judge)."""
    if "reports" not in stack.seeded:
        stack.seeded["reports"] = stack.probe("seed_reports", tasks=TASKS)
    return stack.seeded["reports"]


def evaluate(stack: Stack, data: dict, judge_name: str, judge_url: str, *, batch: bool = False) -> int:
    """Create and start a run with the ``evaluate`` command (no waiting); its id."""
    stack.probe("judge", name=judge_name, base_url=judge_url, batch=batch)
    done = stack.manage("evaluate", "--protocol", "deepsynth", "--judge", judge_name, "--systems",
                        ",".join(data["systems"]), "--tasks", ",".join(data["tasks"]), timeout=120)
    found = re.search(r"run #(\d+)", done.stdout + done.stderr)
    if done.returncode != 0 or found is None:
        raise AssertionError(f"evaluate failed: {done.stdout[-1500:]} {done.stderr[-1500:]}")
    return int(found.group(1))


def run_status(stack: Stack, run_id: int) -> str:
    rows = stack.sql("SELECT status FROM scoring_evaluationrun WHERE id = %s", [run_id])
    return rows[0][0] if rows else ""


def wait_settled(stack: Stack, run_id: int, seconds: float = RUN_SECONDS) -> tuple[str, float]:
    started = time.monotonic()
    deadline = started + seconds
    status = run_status(stack, run_id)
    while status in ("pending", "running", "") and time.monotonic() < deadline:
        time.sleep(0.3)
        status = run_status(stack, run_id)
    return status, time.monotonic() - started


def mid_run_worker(stack: Stack, run_id: int) -> str:
    """Once a job is done and another is running: the worker running it."""
    def busy():
        done = stack.sql("SELECT COUNT(*) FROM scoring_runjob WHERE run_id = %s AND status = 'done'", [run_id])
        running = stack.sql("SELECT worker FROM scoring_runjob WHERE run_id = %s AND status = 'running' "
                            "AND worker <> '' ORDER BY id LIMIT 1", [run_id])
        return running[0][0] if done and done[0][0] and running else None
    return wait_until(busy, 120, "a worker in the middle of a job", step=0.05)


def reference_run(stack: Stack, data: dict, judge_url: str) -> int:
    """The stack's uninterrupted run over its reports (made once)."""
    if "reference" not in stack.seeded:
        run_id = evaluate(stack, data, f"reference-{stack.name}", judge_url)
        status, _ = wait_settled(stack, run_id)
        if status != "finished":
            raise AssertionError(f"the uninterrupted reference run ended {status}")
        stack.seeded["reference"] = {"id": run_id}
    return stack.seeded["reference"]["id"]


def compared(stack: Stack, reference: int, run_id: int, status: str) -> tuple[bool, str]:
    state = stack.probe("run_state", run_id=run_id)
    same = stack.probe("compare", reference=reference, other=run_id)
    ok = (status == "finished" and same["verdicts_equal"] and same["cards_equal"] and state["duplicates"] == 0
          and state["verdict_errors"] == 0)
    numbers = (f"{status}; verdicts {same['verdicts'][1]} vs {same['verdicts'][0]} "
               f"({'identical' if same['verdicts_equal'] else 'DIFFERENT'}), cards {same['cards'][1]} "
               f"({'identical' if same['cards_equal'] else 'DIFFERENT'}), {state['duplicates']} duplicates")
    return ok, numbers


def worker_kill(stack: Stack, broker: str, judge_url: str) -> list[Row]:
    data = seed_runs(stack)
    reference = reference_run(stack, data, judge_url)
    run_id = evaluate(stack, data, f"killed-{stack.name}", judge_url)
    victim = mid_run_worker(stack, run_id)
    stack.kill_worker(victim)
    killed_at = time.monotonic()
    stack.start_worker(victim)  # the same name, as systemd would restart it
    status, _ = wait_settled(stack, run_id)
    ok, numbers = compared(stack, reference, run_id, status)
    numbers += f", finished {time.monotonic() - killed_at:.0f} s after the kill"
    return [Row("worker kill -9 mid-run", broker, "finishes alone; = uninterrupted run; 0 duplicates", numbers, ok)]


def batch_worker_kill(stack: Stack, broker: str, judge_url: str, batch_server) -> list[Row]:
    """Every worker killed with -9 while the run's batch is pending; two workers started again (one
    under a dead one's name, as systemd would); then the batch ends at the endpoint."""
    data = seed_runs(stack)
    reference = reference_run(stack, data, judge_url)
    run_id = evaluate(stack, data, f"batch-{stack.name}", batch_server.base_url, batch=True)

    def pending_batch():
        state = stack.probe("batch_state", run_id=run_id)
        submitted = [b for b, status in state["batches"] if b and status == "in_progress"]
        return state if submitted and state["jobs"].get("waiting") == TASKS * 2 else None

    before = wait_until(pending_batch, 120, "the run's batch pending at the endpoint", step=0.5)
    for hostname in list(stack.workers):
        stack.kill_worker(hostname)
    killed_at = time.monotonic()
    stack.start_worker("w1@faults")
    stack.start_worker("w3@faults")
    batch_server.finish()
    status, _ = wait_settled(stack, run_id)
    after = stack.probe("batch_state", run_id=run_id)
    ok, numbers = compared(stack, reference, run_id, status)
    lines = sum(len(lines) for lines in batch_server.batch_lines.values())
    once = len(batch_server.batches) == 1 and lines == TASKS * 2 * 2 and after["calls"] == {"answered": lines}
    numbers += (f"; {len(batch_server.batches)} batch(es), {lines} request lines, calls {after['calls']} "
                f"(before the kill: {before['calls']}), finished {time.monotonic() - killed_at:.0f} s after the kill")
    return [Row("worker kill -9 while a batch is pending", broker,
                "next workers poll it; one batch, each call once; = uninterrupted run", numbers, ok and once)]


def postgres_restart(stack: Stack, broker: str, judge_url: str, postgres) -> list[Row]:
    data = seed_runs(stack)
    reference = reference_run(stack, data, judge_url)
    run_id = evaluate(stack, data, f"restarted-{stack.name}", judge_url)
    mid_run_worker(stack, run_id)
    started = time.monotonic()
    postgres.restart()
    down = time.monotonic() - started
    status, _ = wait_settled(stack, run_id)
    ok, numbers = compared(stack, reference, run_id, status)
    return [Row("PostgreSQL restarted mid-run", broker, "finishes; = uninterrupted run; 0 duplicates",
                numbers + f", database down {down:.1f} s", ok)]


# --- the broker cut off when a run starts -----------------------------------------------------


def broker_cut(stack: Stack, broker: str, judge_url: str, proxy: TcpProxy) -> list[Row]:
    """``stack`` reaches its broker through ``proxy``; gunicorn and two workers are running."""
    data = seed_runs(stack)
    token = stack.probe("curator_token")["token"]
    reference = reference_run(stack, data, judge_url)
    rows = []
    for mode, label in (("silent", "broker silent, then back"), ("refuse", "broker unreachable, then back")):
        judge_name = f"{mode}-{stack.name}"
        judge_id = stack.probe("judge", name=judge_name, base_url=judge_url)["id"]
        proxy.cut(mode)
        status_health, health, health_seconds = stack.api("GET", "/healthz", token=token)
        status, body, seconds = stack.api("POST", "/api/runs/", token=token, body={
            "protocol": "deepsynth", "judge_config": judge_id, "systems": data["system_ids"],
            "tasks": data["task_ids"], "start": True})
        run_id = body.get("runs", [None])[0] if isinstance(body, dict) else None
        time.sleep(3)  # the workers notice the broker gone, too
        proxy.restore()
        restored = time.monotonic()
        settled, _ = wait_settled(stack, run_id) if run_id else ("not saved", 0.0)
        ok, numbers = compared(stack, reference, run_id, settled) if run_id else (False, "")
        broker_down = isinstance(health, dict) and health.get("broker", {}).get("ok") is False
        ok = ok and status == 503 and isinstance(body, dict) and seconds < ANSWER_WITHIN and broker_down
        numbers = (f"start answered {status} JSON in {seconds:.1f} s, /healthz broker ok="
                   f"{health.get('broker', {}).get('ok') if isinstance(health, dict) else '?'} in {health_seconds:.1f} s"
                   f" (HTTP {status_health}); run {numbers}, {time.monotonic() - restored:.0f} s after the broker came back")
        rows.append(Row(label, broker, "JSON error < 5 s; run completes by itself; = uninterrupted", numbers, ok))
    return rows


# --- a full disk while writing an export -------------------------------------------------------


def disk_full_export(stack: Stack, broker: str) -> list[Row]:
    """The stack's workers are replaced by one whose files may not exceed 4 KiB (RLIMIT_FSIZE:
    what a full disk looks like to the writer, and works unprivileged in a container)."""
    limit = 4 * 1024
    token = stack.probe("curator_token")["token"]
    task_set = stack.probe("seed_export", tasks=200)["task_set"]
    for hostname in list(stack.workers):
        stack.kill_worker(hostname)
    stack.start_worker("limited@faults", file_size_limit=limit)
    request = {"kind": "taskset", "task_set": task_set, "format": "native"}
    status, body, _ = stack.api("POST", "/api/exports/", token=token, body=request)
    if status != 202:
        return [Row("disk full while writing an export", broker, "clear error, no orphan file",
                    f"export request answered {status}: {body}", False)]
    failed = wait_until(lambda: _settled_export(stack, body["id"]), 120, "the export to settle")
    stack.kill_worker("limited@faults")
    stack.start_worker("w1@faults")
    status, again, _ = stack.api("POST", "/api/exports/", token=token, body=request)
    done = wait_until(lambda: _settled_export(stack, again["id"]), 120, "the second export")
    orphans = [name for name in failed["files"] if name.startswith(f"{body['id']}-") or name.startswith(f".{body['id']}-")]
    ok = (failed["status"] == "failed" and failed["error"].startswith("no space left to write the export")
          and not orphans and done["status"] == "done" and done["size"] > limit)
    numbers = (f"{failed['status']}: \"{failed['error'][:70]}…\"; files of that job left: {len(orphans)}; "
               f"the same export without the limit: {done['status']}, {done['size']} bytes")
    return [Row("disk full while writing an export", broker, "clear error, no orphan file", numbers, ok)]


def _settled_export(stack: Stack, job_id: int) -> dict | None:
    state = stack.probe("export_state", job_id=job_id)
    return state if state["status"] in ("done", "failed") else None


# --- annotators while the web process group is killed -----------------------------------------


def annotators_web_kill(stack: Stack, broker: str, *, annotators: int = 50, seconds: float = 30) -> list[Row]:
    seeded = stack.probe("seed_annotation", items=4000, annotators=annotators)
    project = seeded["project_id"]
    web = stack.start_web()
    port = web.port
    answered, errors, lock = [], [], threading.Lock()  # errors: (time, what)
    stop_at = time.monotonic() + seconds

    def annotate(token: str) -> None:
        while time.monotonic() < stop_at:
            try:
                status, body, _ = stack.api("POST", f"/api/projects/{project}/next/", token=token, timeout=30)
                if status != 200:
                    with lock:
                        errors.append((time.monotonic(), status))
                    continue
                if body["assignment"] is None:
                    return
                item, client_token = body["assignment"]["item"], str(uuid.uuid4())
                while time.monotonic() < stop_at + 30:  # a lost answer is asked again with the same token
                    try:
                        status, label, _ = stack.api("POST", "/api/labels/", token=token, timeout=30, body={
                            "item": item, "value": {"decision": "accept"}, "client_token": client_token})
                    except OSError:
                        with lock:
                            errors.append((time.monotonic(), "connection"))
                        time.sleep(0.2)
                        continue
                    with lock:
                        if status == 201:
                            answered.append([label["id"], item])
                        else:
                            errors.append((time.monotonic(), status))
                    break
            except OSError:
                with lock:
                    errors.append((time.monotonic(), "connection"))
                time.sleep(0.2)

    threads = [threading.Thread(target=annotate, args=(t,)) for t in seeded["tokens"]]
    for thread in threads:
        thread.start()
    time.sleep(seconds / 3)
    killed = time.monotonic()
    stack.kill_web()
    stack.start_web(port=port)
    back = time.monotonic()
    for thread in threads:
        thread.join()
    window = (killed, back + 2.0)  # requests in flight at the restart may still fail just after it
    inside = [e for e in errors if window[0] <= e[0] <= window[1]]
    server_errors = [e for e in errors if isinstance(e[1], int) and e[1] >= 500 and e not in inside]
    check = stack.probe("labels_check", project_id=project, answered=answered)
    ok = (check["stored"] == check["answered"] > 0 and check["duplicates"] == 0 and check["over_assigned_items"] == 0
          and check["miscounted_items"] == 0 and not server_errors)
    numbers = (f"{check['answered']} labels answered 201, {check['stored']} stored, {check['duplicates']} duplicates, "
               f"{check['over_assigned_items']} over-assigned, {len(server_errors)} 5xx outside the "
               f"{back - killed:.1f} s restart window ({len(inside)} failed requests inside it)")
    return [Row(f"{annotators} annotators, web kill -9", broker, "every 201 stored; 0 dup; 0 over-assigned; 0 5xx",
                numbers, ok)]


def fake_batch_judge():
    """The Batch API fake of the test suite, in this process: its batches end when a scenario says."""
    from tests.support.fake_batch import FakeBatchOpenAI
    from tests.support.fake_openai import labelled_checklist_responder

    server = FakeBatchOpenAI()
    server.responder = labelled_checklist_responder
    return server


def fake_judge():
    """The loopback OpenAI-compatible judge of the test suite, answering after 0.4 s."""
    from tests.support.fake_openai import FakeOpenAIProcess

    return FakeOpenAIProcess(latency=0.4, responder="labelled-checklist")

