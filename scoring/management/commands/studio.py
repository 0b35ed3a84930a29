"""Run the web server and Celery workers together; Ctrl-C stops them all.

Two workers: the general one (``--concurrency``, every queue) and one for exports only, so an
export never waits behind a judge run's jobs (``CELERY_TASK_ROUTES``)."""

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Start the web server on ADDRPORT and real Celery worker processes (general, exports); stop them on Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--concurrency", type=int, default=2)

    def handle(self, *args, addrport: str, concurrency: int, **options):
        python = sys.executable
        env = dict(os.environ)
        children = {
            "worker": subprocess.Popen(
                [python, "-m", "celery", "-A", "config", "worker", "--loglevel=INFO",
                 f"--concurrency={concurrency}", "--hostname=studio@%h", "--queues=celery,exports"],
                env=env,
                start_new_session=True,
            ),
            "exports worker": subprocess.Popen(
                [python, "-m", "celery", "-A", "config", "worker", "--loglevel=INFO", "--pool=threads",
                 "--concurrency=1", "--hostname=studio-exports@%h", "--queues=exports"],
                env=env,
                start_new_session=True,
            ),
            "web": subprocess.Popen(
                [python, "manage.py", "runserver", addrport, "--noreload"], env=env, start_new_session=True
            ),
        }
        self.stdout.write(self.style.SUCCESS(f"Survey Eval Studio on http://{addrport}/  (Ctrl-C stops web and worker)"))
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping:
                for name, proc in children.items():
                    if proc.poll() is not None:
                        self.stderr.write(f"the {name} process exited with code {proc.returncode}; stopping")
                        stopping = True
                time.sleep(0.5)
        finally:
            for proc in children.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 15
            for proc in children.values():
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
            self.stdout.write("stopped web server and workers")
