import pytest


@pytest.fixture
def sent(monkeypatch):
    """Celery messages the services send (after commit), instead of a broker."""
    messages = []
    monkeypatch.setattr("scoring.tasks.execute_job.delay", lambda job_id: messages.append(("execute", job_id)))
    monkeypatch.setattr("scoring.tasks.finalize_run.delay", lambda run_id: messages.append(("finalize", run_id)))
    return messages
