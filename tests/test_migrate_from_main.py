"""Today's migrations applied to a database made by `main` before the `core` app keep its data.

The input (tests/fixtures/README.md says how it was made) holds the demo and audit history in
both old trails. It is restored to a SQLite file, migrated by `manage.py migrate` in a separate
process, and compared table by table and audit row by audit row with what it held before.
"""

import gzip
import importlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from core.audit_actions import AuditAction

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "tests" / "fixtures" / "main-612c70e-demo.sql.gz"

# Old tables whose rows now live in another table (old name -> new name).
RENAMED: dict[str, str] = {}
# Old audit tables whose rows the new trail carries (checked row by row below, not by count).
MERGED_INTO_AUDIT = {"benchmark_revision", "annotation_auditevent"}


def _restore(path: Path) -> None:
    with gzip.open(DUMP, "rt", encoding="utf-8") as dump, sqlite3.connect(path) as conn:
        conn.executescript(dump.read())


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    return {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}


# The workspace named an event's target by a kind; the one trail names it by its model.
KIND_MODELS = {
    "annotation_item": "annotation.annotationitem", "annotation_project": "annotation.annotationproject",
    "user": "auth.user", "task": "benchmark.task", "checklist_item": "benchmark.checklistitem",
}


# Migration core 0005 rewrote the older action spellings (``review:accepted`` → ``review.accepted``).
SPELLINGS = importlib.import_module("core.migrations.0005_auditlog_action_spellings").SPELLINGS


def _spelt(action: str) -> str:
    return SPELLINGS.get(action, action)


def _json(text):
    return None if text is None else json.loads(text)


def _old_audit(conn: sqlite3.Connection) -> list[tuple]:
    """Every old audit row as (actor, action, target model, target id, project, time, before, after)."""
    revisions = conn.execute(
        "SELECT r.actor_id, r.action, ct.app_label || '.' || ct.model, r.object_id, NULL, r.created_at, r.before, "
        "r.after FROM benchmark_revision r JOIN django_content_type ct ON ct.id = r.content_type_id"
    ).fetchall()
    events = [
        (actor, _spelt(action), KIND_MODELS[kind], target, project, at, before, after)
        for actor, action, kind, target, project, at, before, after in conn.execute(
            "SELECT actor_id, action, target_kind, target_id, project_id, at, before, after FROM annotation_auditevent")
    ]
    revisions = [(actor, _spelt(action), *rest) for actor, action, *rest in revisions]
    return sorted(((*row[:6], _json(row[6]), _json(row[7])) for row in revisions + events), key=repr)


def _new_audit(conn: sqlite3.Connection) -> list[tuple]:
    """The same projection of the migrated database's one trail."""
    rows = conn.execute(
        "SELECT a.actor_id, a.action, ct.app_label || '.' || ct.model, a.object_id, a.project_id, a.created_at, "
        "a.before, a.after FROM core_auditlog a LEFT JOIN django_content_type ct ON ct.id = a.content_type_id"
    ).fetchall()
    return sorted(((*row[:6], _json(row[6]), _json(row[7])) for row in rows), key=repr)


def _applied_revisions(conn: sqlite3.Connection, table: str) -> list[tuple]:
    """Each item's applied revision as (item, action, target id): the row it names, not just its id."""
    return sorted(conn.execute(
        f"SELECT i.id, r.action, r.object_id FROM annotation_annotationitem i JOIN {table} r "
        "ON r.id = i.applied_revision_id"
    ).fetchall())


def test_migrations_keep_the_data_of_a_database_made_by_main(tmp_path):
    db = tmp_path / "old.sqlite3"
    _restore(db)
    with sqlite3.connect(db) as conn:
        before = _counts(conn)
        audit_before = _old_audit(conn)
        applied_before = [(item, _spelt(action), target)
                          for item, action, target in _applied_revisions(conn, "benchmark_revision")]
    assert len(audit_before) > 40 and applied_before  # the fixture's history in both old trails

    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=f"sqlite:///{db}",
        VAR_DIR=str(tmp_path / "var"),
        DEBUG="1",
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]

    with sqlite3.connect(db) as conn:
        after = _counts(conn)
        audit_after = _new_audit(conn)
        applied_after = _applied_revisions(conn, "core_auditlog")
        old_tables = {"benchmark_revision", "annotation_auditevent"} & set(_counts(conn))
    assert not old_tables, f"old audit tables left: {old_tables}"
    assert applied_after == applied_before
    for table, count in before.items():
        if table in MERGED_INTO_AUDIT or table == "django_migrations":
            continue
        if table == "django_content_type" or table == "auth_permission":
            assert after[table] >= count, table  # new models add theirs; stale ones stay
            continue
        assert after[RENAMED.get(table, table)] == count, table
    assert audit_after == audit_before, f"{len(audit_before)} old audit rows, {len(audit_after)} new"
    assert {row[1] for row in audit_after} <= set(AuditAction.values)  # every stored action is a member now
