"""Shared pytest fixtures, registered for the whole suite by ``pytest_plugins`` in tests/conftest.py."""

import pytest

from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai():
    """A running scripted OpenAI-compatible server on 127.0.0.1 (see ``tests.support.fake_openai``)."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()
