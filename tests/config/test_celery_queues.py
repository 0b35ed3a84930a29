"""Exports have a queue of their own (config/settings.py), and a worker started without --queues
still consumes it: faults, benches and a user's own `celery -A config worker` run exports."""

from config.celery import app


def test_exports_are_routed_to_their_own_queue():
    assert app.amqp.router.route({}, "benchmark.run_export")["queue"].name == "exports"
    assert app.amqp.router.route({}, "scoring.execute_job")["queue"].name == "celery"


def test_a_worker_without_queues_consumes_the_exports_queue_too():
    # What `celery worker` without -Q subscribes to: every queue the app declares.
    assert {queue.name for queue in app.amqp.queues.values()} == {"celery", "exports"}
