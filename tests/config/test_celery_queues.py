"""Exports have a queue of their own (config/settings.py); the workers the project starts
(studio, faults, benches) consume it beside the default queue (--queues=celery,exports)."""

from config.celery import app


def test_exports_are_routed_to_their_own_queue():
    assert app.amqp.router.route({}, "benchmark.run_export")["queue"].name == "exports"
    assert app.amqp.router.route({}, "scoring.execute_job")["queue"].name == "celery"
