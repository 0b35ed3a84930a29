"""``python -m bench --against REV --cpu``: its arguments, the seed's size, the per-run copies of
each side's seed and their cleanup, and both sides end to end against HEAD at a tiny load.

No CPU figure is asserted beyond being measured (the machine is shared): the statements per
item are, since both sides are the same tree."""

import os
import tempfile
from dataclasses import asdict
from pathlib import Path

import psycopg
import pytest

from bench import against, loop_cpu
from bench.__main__ import arguments

TINY = asdict(loop_cpu.CpuLoad(loops=3, warmup=1, per_task=10))


@pytest.fixture
def scratch_parent(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_arguments_of_cpu():
    args = arguments(["--against", "2bc7722", "--cpu"])
    assert (args.against, args.cpu, args.per_task, args.rounds) == ("2bc7722", True, None, 3)
    assert arguments(["--against", "HEAD", "--cpu", "--per-task", "465", "--rounds", "4"]).per_task == 465


@pytest.mark.parametrize(("argv", "message"), [
    (["--cpu"], "--cpu and --per-task go with --against"),
    (["--per-task", "10"], "--cpu and --per-task go with --against"),
    (["--against", "HEAD", "--per-task", "10"], "--per-task N (N ≥ 1) goes with --cpu"),
    (["--against", "HEAD", "--cpu", "--per-task", "0"], "--per-task N (N ≥ 1) goes with --cpu"),
])
def test_bad_cpu_arguments_are_refused_with_the_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        arguments(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("load", [loop_cpu.CpuLoad(), loop_cpu.QUICK, loop_cpu.CpuLoad(per_task=465),
                                  loop_cpu.CpuLoad(loops=3, warmup=1, per_task=10)])
def test_the_seed_holds_a_run_in_whole_tasks_with_one_to_spare(load):
    batches = load.warmup // loop_cpu.BATCH_SHARE + 1 + max(1, load.loops // loop_cpu.BATCH_SHARE)
    labelled = 2 * (load.warmup + load.loops) + loop_cpu.BATCH_SHARE * batches
    assert load.items % load.per_task == 0
    assert labelled + load.per_task <= load.items < labelled + 2 * load.per_task


def test_a_sqlite_run_works_on_a_copy_that_goes_away(tmp_path):
    seeded = tmp_path / "this.sqlite3"
    seeded.write_bytes(b"the seed")
    copy = loop_cpu.run_copy(f"sqlite:///{seeded}")
    assert copy == f"sqlite:///{tmp_path / 'this-run.sqlite3'}"
    loop_cpu.copy_database(f"sqlite:///{seeded}", copy)
    assert (tmp_path / "this-run.sqlite3").read_bytes() == b"the seed"
    loop_cpu.drop_copy(copy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["this.sqlite3"]


def _exists(url: str, name: str) -> bool:
    with psycopg.connect(f"{url.rpartition('/')[0]}/postgres", autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="needs PostgreSQL")
def test_a_postgresql_run_works_on_a_copy_of_the_seeded_database_that_goes_away():
    base = os.environ["DATABASE_URL"].rpartition("/")[0]
    seeded = f"{base}/{os.environ['DATABASE_URL'].rpartition('/')[2]}_cpu_test_seed"
    copy = loop_cpu.run_copy(seeded)
    assert copy == f"{seeded}_run"
    try:
        against.fresh_database(seeded)
        with psycopg.connect(seeded, autocommit=True) as conn:
            conn.execute("CREATE TABLE seeded_rows (n integer)")
            conn.execute("INSERT INTO seeded_rows VALUES (1), (2)")
        loop_cpu.copy_database(seeded, copy)
        with psycopg.connect(copy, autocommit=True) as conn:
            assert conn.execute("SELECT COUNT(*) FROM seeded_rows").fetchone() == (2,)
        loop_cpu.copy_database(seeded, copy)  # a copy left by a killed run is replaced
        loop_cpu.drop_copy(copy)
        assert not _exists(copy, copy.rpartition("/")[2])
    finally:
        loop_cpu.drop_copy(copy)
        against.drop_database(seeded)
    assert not _exists(seeded, seeded.rpartition("/")[2])


@pytest.mark.slow
def test_cpu_against_head_end_to_end(scratch_parent):
    """Both sides really run (this tree, then HEAD exported), one round each on SQLite: each
    seeds once, measures on a copy, and nothing is left behind."""
    report = against.compare("HEAD", load=TINY, rounds=1, measure=loop_cpu.measure_side,
                             summary=loop_cpu.summary, say=lambda line: None)
    table = {row["figure"]: row for row in report["table"]}
    for mode in loop_cpu.MODES:
        cpu, statements = table[f"{mode}: CPU ms per item"], table[f"{mode}: statements per item"]
        assert cpu["this_median"] > 0 and cpu["rev_median"] > 0
        assert cpu["ratio"] == pytest.approx(cpu["this_median"] / cpu["rev_median"])
        assert statements["this_median"] == statements["rev_median"] > 0  # the same tree on both sides
    assert set(table) == {f"{mode}: {what}" for mode in loop_cpu.MODES
                          for what in ("CPU ms per item", "statements per item")} | {
        "load average at start", "load average at end"}
    assert list(Path(scratch_parent).glob("ses-bench-against-*")) == []
