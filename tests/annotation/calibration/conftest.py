import pytest

from annotation.tasks import refresh_calibrated_scores


@pytest.fixture(autouse=True)
def calibration_worker(monkeypatch):
    """A worker that computes calibrated scores as soon as they are asked for (the task, run here):
    these tests read the figures; tests/annotation/calibration/test_stored.py reads the waiting."""
    monkeypatch.setattr(refresh_calibrated_scores, "apply_async", lambda args, **kwargs: refresh_calibrated_scores(*args))
