"""A loopback receiver for outgoing webhooks."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.test import override_settings


class Receiver:
    """A stdlib HTTP server on 127.0.0.1 recording every POST; answers with scripted statuses (then 200).

    While it runs, the address rule (``core.outbound``) allows it unless ``allowed=False``: the
    server refuses loopback addresses and non-default ports, so a test of delivery opens exactly
    this receiver's address and port, and a test of the rule keeps it closed."""

    def __init__(self, *statuses: int, allowed: bool = True) -> None:
        self.statuses = list(statuses)
        self.allowed = allowed
        self._override = None
        self.requests: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> "Receiver":
        if self.allowed:
            self._override = override_settings(OUTBOUND_ALLOWED_NETWORKS=["127.0.0.1/32"],
                                               OUTBOUND_ALLOWED_PORTS=[self.server.server_address[1]])
            self._override.enable()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._override is not None:
            self._override.disable()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
