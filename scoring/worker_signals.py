"""Start and stop the heartbeat with the Celery worker process."""

from celery.signals import worker_ready, worker_shutdown

from .workers import HeartbeatThread

_thread: HeartbeatThread | None = None


@worker_ready.connect
def start_heartbeat(sender=None, **kwargs) -> None:
    global _thread
    _thread = HeartbeatThread(getattr(sender, "hostname", None) or "worker")
    _thread.start()


@worker_shutdown.connect
def stop_heartbeat(**kwargs) -> None:
    if _thread is not None:
        _thread.stop()
