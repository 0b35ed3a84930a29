"""Shared pytest fixtures, registered for the whole suite by ``pytest_plugins`` in tests/conftest.py."""

import pytest

from scoring.judges.slots import SHARED_SLOTS, FileSlots
from tests.support.fake_openai import FakeOpenAI

DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}


@pytest.fixture(autouse=True)
def judge_slots(request, tmp_path_factory):
    """Endpoint slots (``scoring.judges.slots``) in the test database for tests that have one; a test
    without database access holds them in files of its own, as the embedded default does."""
    SHARED_SLOTS.reset()
    if not (DB_FIXTURES & set(request.fixturenames) or request.node.get_closest_marker("django_db")):
        SHARED_SLOTS.use(FileSlots(tmp_path_factory.mktemp("judge-slots")))
    yield
    SHARED_SLOTS.reset()


@pytest.fixture
def fake_openai():
    """A running scripted OpenAI-compatible server on 127.0.0.1 (see ``tests.support.fake_openai``)."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()
