"""config.sqlite: write transactions hold a flock beside the database from BEGIN to COMMIT or
ROLLBACK, so writers queue in the kernel instead of in SQLite's sleep-and-retry loop."""

import fcntl
import os

import pytest
from django.db.utils import ConnectionHandler

from config.settings import database_from_url


@pytest.fixture
def unblocked(django_db_blocker):
    """A database of our own, outside the test database pytest-django guards."""
    with django_db_blocker.unblock():
        yield


@pytest.fixture
def sqlite(tmp_path, unblocked):
    handler = ConnectionHandler({"default": database_from_url(f"sqlite:///{tmp_path / 'studio.sqlite3'}")})
    connection = handler["default"]
    connection.cursor().execute("CREATE TABLE t (x INTEGER)")
    yield connection
    connection.close()


def queue_is_free(path) -> bool:
    """Whether another writer could take the queue now (a descriptor of our own, as another
    process or thread would have)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def begin(connection) -> None:
    """What ``transaction.atomic`` does on entry in autocommit mode."""
    connection.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)


def test_the_settings_pick_the_queued_backend(sqlite):
    assert type(sqlite).__module__ == "config.sqlite.base"
    assert sqlite.vendor == "sqlite"
    assert sqlite.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_a_write_transaction_holds_the_queue_until_commit(sqlite):
    queue = f"{sqlite.settings_dict['NAME']}-writers"
    begin(sqlite)
    sqlite.cursor().execute("INSERT INTO t VALUES (1)")
    assert not queue_is_free(queue)
    sqlite.commit()
    sqlite.set_autocommit(True)
    assert queue_is_free(queue)
    assert sqlite.cursor().execute("SELECT COUNT(*) FROM t").fetchone() == (1,)


def test_a_rollback_releases_the_queue_and_keeps_nothing(sqlite):
    queue = f"{sqlite.settings_dict['NAME']}-writers"
    begin(sqlite)
    sqlite.cursor().execute("INSERT INTO t VALUES (1)")
    sqlite.rollback()
    sqlite.set_autocommit(True)
    assert queue_is_free(queue)
    assert sqlite.cursor().execute("SELECT COUNT(*) FROM t").fetchone() == (0,)


def test_closing_a_connection_inside_a_transaction_releases_the_queue(sqlite):
    queue = f"{sqlite.settings_dict['NAME']}-writers"
    begin(sqlite)
    sqlite.close()
    assert queue_is_free(queue)


def test_reads_and_autocommit_writes_do_not_queue(sqlite):
    queue = f"{sqlite.settings_dict['NAME']}-writers"
    sqlite.cursor().execute("INSERT INTO t VALUES (1)")
    assert queue_is_free(queue)


def test_an_in_memory_database_has_no_queue_file(tmp_path, unblocked):
    handler = ConnectionHandler({"default": database_from_url("sqlite://:memory:")})
    connection = handler["default"]
    begin(connection)
    connection.cursor().execute("SELECT 1")
    connection.commit()
    assert connection._queue_fd is None
    assert not list(tmp_path.iterdir())
