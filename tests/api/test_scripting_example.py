"""The documented scripting example, run against a live server (upload → run → poll → scores).

Jobs run in Celery workers, which the live-server test does not start; the example's run is
created and started, and the test checks the upload, the listing and the polling shape with
``--timeout 0`` (one poll)."""

import importlib.util
from pathlib import Path

import pytest

from benchmark.models import Report
from tests.api.conftest import World  # noqa: F401

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "scripting_example.py"


@pytest.mark.django_db(transaction=True)
def test_scripting_example_against_live_server(live_server, tmp_path, monkeypatch):
    from tests.annotation_factories import JudgeConfigFactory, curator
    from tests.factories import SystemFactory, TaskFactory

    monkeypatch.setattr("scoring.tasks.execute_job.delay", lambda job_id: None)  # no broker in this test
    user = curator("scripter")
    user.set_password("scripting-pass-1")
    user.save()
    task, system, judge = TaskFactory(protocol="deepsynth"), SystemFactory(), JudgeConfigFactory()
    report = tmp_path / f"{task.key}.md"
    report.write_text("# Report\n\nA finding [1].\n\n## References\n[1] A paper.\n")
    spec = importlib.util.spec_from_file_location("scripting_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main([
        "--url", live_server.url, "--user", "scripter", "--password", "scripting-pass-1", "--system", str(system.pk),
        "--protocol", "deepsynth", "--judge-config", str(judge.pk), "--timeout", "0", str(report),
    ])
    assert result["uploaded"]["created"] == 1
    assert Report.objects.filter(task=task, system=system).exists()
    assert [t["key"] for t in result["tasks"]] == [task.key]
    assert result["run"]["status"] == "running"
    assert {"total", "done", "pending", "eta_seconds"} <= result["progress"].keys()
    assert isinstance(result["cards"], list)
