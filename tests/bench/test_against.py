"""``python -m bench --against REV``: its arguments, the ratio arithmetic, the alternation and the
cleanup (the temporary tree, the databases, the servers), end to end against HEAD at a tiny load.

No timing is asserted (the machine is shared): only that every run happened in turn, the
table is the medians' quotient, and nothing is left behind, also after Ctrl-C.
"""

import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from bench import against, loop_cpu
from bench.__main__ import arguments
from bench.web_bench import WebLoad

ROOT = Path(__file__).resolve().parents[2]
# the smallest load the web bench runs: 200 items, a few loops per mode, two annotators
MINI = asdict(WebLoad(items=200, sequential_loops=3, loops_per_annotator=1, warmup_loops=1, page_repeats=1,
                      query_loops=1, dashboard_tasks=2, annotators=2, workers=1, threads=2))
MODES = ("workspace", "REST", "REST batch of 10")


@pytest.fixture
def scratch_parent(tmp_path, monkeypatch):
    """Where compare makes its temporary folder, so that a test sees what is left in it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _left_behind(parent: Path) -> list[Path]:
    return list(parent.glob("ses-bench-against-*"))


def test_arguments_of_against():
    args = arguments(["--against", "2bc7722"])
    assert (args.against, args.rounds, args.only, args.quick) == ("2bc7722", 3, None, False)
    assert arguments(["--against", "HEAD~1", "--only", "web", "--rounds", "5", "--quick"]).rounds == 5


@pytest.mark.parametrize(("argv", "message"), [
    (["--against", "HEAD", "--rounds", "2"], "at least 3 runs of each side"),
    (["--against", "HEAD", "--only", "metrics"], "--against compares the web bench's rows only"),
    (["--rounds", "4"], "--rounds goes with --against"),
    (["--against"], "expected one argument"),
])
def test_bad_arguments_are_refused_with_the_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        arguments(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unknown_revision_stops_before_anything_is_made(scratch_parent):
    with pytest.raises(against.AgainstError, match="--against no-such-rev-9f8e: no such commit"):
        against.compare("no-such-rev-9f8e", load=MINI, measure=lambda *a: pytest.fail("measured"))
    assert _left_behind(scratch_parent) == []


def test_ratios_are_this_median_over_rev_median():
    this = [{"a": 3.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, {"a": 2.0, "b": 1.0, "only this": 5.0}]
    rev = [{"a": 4.0, "b": 2.0}, {"a": 8.0, "b": 0.5}, {"a": 1.0, "b": 4.0}]
    table = {row["figure"]: row for row in against.ratio_rows(this, rev)}
    assert (table["a"]["this_median"], table["a"]["rev_median"], table["a"]["ratio"]) == (2.0, 4.0, 0.5)
    assert (table["b"]["this_median"], table["b"]["rev_median"], table["b"]["ratio"]) == (1.0, 2.0, 0.5)
    assert table["a"]["this_runs"] == [3.0, 1.0, 2.0] and table["a"]["rev_runs"] == [4.0, 8.0, 1.0]
    assert table["only this"]["rev_median"] is None and table["only this"]["ratio"] is None
    text = against.format_table(list(table.values()), "2bc7722")
    assert "2bc7722 ms" in text.splitlines()[0]
    assert text.splitlines()[1].split()[-3:] == ["2.00", "4.00", "0.50"]
    assert text.splitlines()[3].split()[-3:] == ["5.00", "-", "-"]


def test_compared_rows_are_the_loops_times_per_item():
    rows = [
        {"figure": "sqlite, 200 items, REST: sequential p50 per item", "value": 4.0, "unit": "ms"},
        {"figure": "sqlite, 200 items, REST: 2 annotators, items/s", "value": 150.0, "unit": "items/s"},
        {"figure": "sqlite, 200 items: queries, per item, REST (POST /api/labels/ with next)", "value": 13,
         "unit": "queries"},
        {"figure": "sqlite, 200 items: pairwise page p95", "value": 40.0, "unit": "ms"},
    ]
    assert against.compared(rows) == {"sqlite, 200 items, REST: sequential p50 per item": 4.0}


def test_sides_alternate_and_the_tree_goes_away(scratch_parent):
    seen = []

    def fake_measure(side, load, log):
        assert (side.tree / "bench" / "web_bench.py").is_file() and (side.tree / "manage.py").is_file()
        seen.append((side.name, side.tree, side.database_url))
        return {"x: sequential p50 per item": 2.0 if side.name == "this tree" else 4.0}

    report = against.compare("HEAD", load=MINI, measure=fake_measure, say=lambda line: None)
    assert [name for name, _, _ in seen] == ["this tree", "HEAD"] * 3
    this_tree, rev_tree = seen[0][1], seen[1][1]
    assert this_tree == ROOT and rev_tree.parent.parent == scratch_parent
    assert {url for _, _, url in seen} == {f"sqlite:///{rev_tree.parent / 'this.sqlite3'}",
                                            f"sqlite:///{rev_tree.parent / 'rev.sqlite3'}"}
    assert report["table"] == [{"figure": "x: sequential p50 per item", "this_median": 2.0, "rev_median": 4.0,
                                "ratio": 0.5, "this_runs": [2.0] * 3, "rev_runs": [4.0] * 3}]
    assert report["commit"] == subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True).strip()
    assert _left_behind(scratch_parent) == []


def test_an_interrupted_comparison_removes_its_tree(scratch_parent):
    calls = []

    def interrupted(side, load, log):
        calls.append(side.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return {}

    with pytest.raises(KeyboardInterrupt):
        against.compare("HEAD", load=MINI, measure=interrupted, say=lambda line: None)
    assert calls == ["this tree", "HEAD", "this tree"]
    assert _left_behind(scratch_parent) == []


def test_postgresql_sides_sit_next_to_database_url(tmp_path):
    assert against.side_databases("postgres://postgres@127.0.0.1:5432/ses_x", tmp_path) == {
        "this": "postgres://postgres@127.0.0.1:5432/ses_x_against_this",
        "rev": "postgres://postgres@127.0.0.1:5432/ses_x_against_rev"}


@pytest.mark.parametrize(("broken", "run", "load"), [
    ("bench/web_bench.py", against.run_side, MINI),  # the wall-clock rows import the tree's web bench
    ("config/settings.py", loop_cpu.measure_side, asdict(loop_cpu.QUICK)),  # --cpu sets its Django up first
])
def test_a_missing_dependency_names_the_revision_and_the_module(broken, run, load, tmp_path):
    tree = tmp_path / "old-tree"
    for package in ("bench", "config"):
        (tree / package).mkdir(parents=True)
        (tree / package / "__init__.py").write_text("")
    (tree / broken).write_text("import a_module_this_venv_lacks\n")
    side = against.Side("0ld5ha1", tree, f"sqlite:///{tmp_path / 'x.sqlite3'}", tmp_path / "work")
    with pytest.raises(against.AgainstError) as error:
        run(side, load, tmp_path / "side.log")
    assert "0ld5ha1" in str(error.value) and "no module named 'a_module_this_venv_lacks'" in str(error.value)
    assert not (side.work_dir / "seeded").exists()  # --cpu: nothing counts as seeded


@pytest.mark.slow
def test_against_head_end_to_end(scratch_parent):
    """Both sides really run (this tree, then HEAD exported), one round each on SQLite."""
    report = against.compare("HEAD", load=MINI, rounds=1, say=lambda line: None)
    table = {row["figure"]: row for row in report["table"]}
    for mode in MODES:
        for figure in ("sequential p50 per item", "sequential p95 per item", "2 annotators, p95 per item"):
            row = table[f"sqlite, 200 items, {mode}: {figure}"]
            assert row["this_median"] > 0 and row["rev_median"] > 0
            assert row["ratio"] == pytest.approx(row["this_median"] / row["rev_median"])
    assert len(table) == 3 * len(MODES)
    assert _left_behind(scratch_parent) == []


def _processes_in(folder: Path) -> dict[int, str]:
    """The processes whose working directory is in ``folder`` (also once deleted), with their command lines."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(folder):
                found[int(proc.name)] = (proc / "cmdline").read_text().replace("\0", " ")
        except OSError:
            pass
    return found


def _answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/login/")
        return connection.getresponse().status > 0
    except OSError:
        return False
    finally:
        connection.close()


@pytest.mark.slow
def test_ctrl_c_stops_the_revision_server_and_removes_everything(tmp_path):
    """SIGINT while REV's side serves (its gunicorn up, in REV's folder): the side stops its
    server, the comparison removes the tree, and no process is left working in it."""
    code = f"from bench import against; against.compare('HEAD', load={MINI!r}, rounds=3, say=print)"
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp_path)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    servers: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 300
        while not (servers and _answers(int(re.search(r"--bind 127\.0\.0\.1:(\d+)", next(iter(servers.values())))[1]))):
            assert parent.poll() is None, parent.communicate()
            assert time.monotonic() < deadline, "REV's gunicorn never answered"
            time.sleep(0.2)
            trees = list(tmp_path.glob("ses-bench-against-*/tree"))
            servers = {pid: cmd for pid, cmd in _processes_in(trees[0]).items() if "gunicorn" in cmd} if trees else {}
        (scratch,) = _left_behind(tmp_path)
        parent.send_signal(signal.SIGINT)
        out, err = parent.communicate(timeout=180)
        assert "KeyboardInterrupt" in err
        assert "round 1/3, this tree" in out and "round 1/3, HEAD" not in out
        assert not scratch.exists()
        assert [pid for pid in servers if Path(f"/proc/{pid}").exists()] == []
        assert _processes_in(scratch) == {}
    finally:
        for pid in servers:  # a failed test leaves no server of its own running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


def test_the_table_is_written_as_json(tmp_path, monkeypatch, capsys):
    """`python -m bench --against` prints the table and keeps every run in var/bench_against.json."""
    from bench import __main__ as bench_main

    monkeypatch.setattr(bench_main, "ROOT", tmp_path)
    monkeypatch.setattr(against, "compare", lambda rev, **kw: {
        "rev": rev, "commit": "c0ffee" * 6, "rounds": kw["rounds"], "load": kw["load"],
        "table": against.ratio_rows([{"f": 1.0}] * 3, [{"f": 2.0}] * 3), "runs": {}})
    assert bench_main.run_against(arguments(["--against", "HEAD~3", "--quick"])) == 0
    out = capsys.readouterr().out
    assert "HEAD~3 = c0ffeec0ffee" in out and out.splitlines()[-2].split() == ["f", "1.00", "2.00", "0.50"]
    written = json.loads((tmp_path / "var" / "bench_against.json").read_text())
    assert written["table"][0]["ratio"] == 0.5 and written["load"]["items"] == 10_000
