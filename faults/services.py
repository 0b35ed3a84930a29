"""The servers a fault run needs: the machine's when they answer, our own otherwise, and a TCP
proxy to cut a broker off without touching it. Nothing here stops a server it did not start."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

MACHINE_POSTGRES = "postgres://postgres@127.0.0.1:5432"
MACHINE_REDIS = ("127.0.0.1", 6379)
MACHINE_RABBITMQ = ("127.0.0.1", 5672)


class FaultsError(RuntimeError):
    """The fault run could not set up what it needs (not a lost-data finding)."""


def die_with_parent() -> None:
    """``preexec_fn`` of every process ``make faults`` starts: the kernel sends it SIGKILL when the
    orchestrator dies, even by SIGKILL (``PR_SET_PDEATHSIG``), so a run killed at a time limit leaves
    nothing behind; a process started in a session of its own is otherwise out of reach of the
    signal that killed us. The kernel ties it to the thread that started the process: start them
    from the main thread (every scenario runs there)."""
    import ctypes
    import signal as signals

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signals.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the orchestrator died before the line above: nobody would stop this one
        os._exit(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(address: tuple[str, int], timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(address, timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(condition, seconds: float, what: str, step: float = 0.2):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise FaultsError(f"timed out after {seconds:.0f} s waiting for {what}")


# --- PostgreSQL -------------------------------------------------------------------------------


class Postgres:
    """A server to make databases on: ``Postgres.machine()`` when 127.0.0.1:5432 lets user postgres
    in, else (and for restarts, always) ``Postgres.throwaway()``: a cluster of ours in a temporary
    folder on a free port, run as an unprivileged account, removed by ``stop``."""

    def __init__(self, base_url: str, *, folder: Path | None = None, run_as: list[str] | None = None,
                 bindir: Path | None = None, port: int | None = None) -> None:
        self.base_url, self.folder, self.run_as, self.bindir = base_url, folder, run_as or [], bindir
        self.port = port

    @property
    def own(self) -> bool:
        return self.folder is not None

    @classmethod
    def machine_or_throwaway(cls) -> Postgres:
        if answers(("127.0.0.1", 5432)):
            try:
                import psycopg

                with psycopg.connect(f"{MACHINE_POSTGRES}/postgres", connect_timeout=3) as conn:
                    conn.execute("SELECT 1")
                return cls(MACHINE_POSTGRES)
            except Exception:  # answers but does not let us in: use our own
                pass
        return cls.throwaway()

    @classmethod
    def throwaway(cls) -> Postgres:
        bindir = _postgres_bindir()
        folder = Path(tempfile.mkdtemp(prefix="ses-faults-pg."))
        run_as = []
        if os.getuid() == 0:  # PostgreSQL refuses to run as root
            account = "postgres" if _account_exists("postgres") else "nobody"
            shutil.chown(folder, user=account)
            run_as = ["runuser", "-u", account, "--"]
        port = free_port()
        server = cls(f"postgres://postgres@127.0.0.1:{port}", folder=folder, run_as=run_as, bindir=bindir, port=port)
        server._pg(["initdb", "-D", str(folder / "data"), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
        server.start()
        return server

    def _pg(self, args: list[str]) -> None:
        done = subprocess.run([*self.run_as, str(self.bindir / args[0]), *args[1:]], capture_output=True, text=True)
        if done.returncode != 0:
            raise FaultsError(f"{args[0]} failed: {done.stderr[-2000:]}")

    def start(self) -> None:
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off "
                   f"-c full_page_writes=off -c max_connections=300")
        self._pg(["pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.folder / "server.log"), "-w",
                  "-o", options, "start"])

    def restart(self) -> None:
        """Only our own cluster: a fast shutdown (every session is cut) and a start."""
        assert self.own, "never restart a server we did not start"
        self._pg(["pg_ctl", "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"])
        self.start()

    def stop(self) -> None:
        if self.own:
            subprocess.run([*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), "-m",
                            "immediate", "stop"], capture_output=True)
            shutil.rmtree(self.folder, ignore_errors=True)

    def database(self, name: str) -> str:
        """A fresh database ``name`` (dropped first if a previous fault run left it)."""
        import psycopg

        with psycopg.connect(f"{self.base_url}/postgres", autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"{self.base_url}/{name}"

    def drop(self, name: str) -> None:
        import psycopg

        with psycopg.connect(f"{self.base_url}/postgres", autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _postgres_bindir() -> Path:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    if candidates:
        return candidates[0].parent
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise FaultsError("PostgreSQL's initdb is not installed (Debian package 'postgresql')")


def _account_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


# --- brokers ----------------------------------------------------------------------------------


class Redis:
    """The machine's Redis (database 15; our messages go to a queue of our own) or a redis-server
    of ours on a free port, without persistence."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        if answers(MACHINE_REDIS):
            self.address, self.db = MACHINE_REDIS, 15
            return
        if shutil.which("redis-server") is None:
            raise FaultsError("no Redis answers on 127.0.0.1:6379 and redis-server is not installed")
        self.address, self.db = ("127.0.0.1", free_port()), 0
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.address[1]), "--bind", "127.0.0.1", "--save", "", "--appendonly",
             "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=die_with_parent)
        wait_until(lambda: answers(self.address), 20, "our redis-server")

    @property
    def own(self) -> bool:
        return self.process is not None

    def url(self, address: tuple[str, int] | None = None) -> str:
        host, port = address or self.address
        return f"redis://{host}:{port}/{self.db}"

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)


def rabbitmq_url(address: tuple[str, int] = MACHINE_RABBITMQ) -> str:
    """The machine's RabbitMQ (guest account; our messages go to a queue of our own), or a proxy to it."""
    return f"amqp://guest:guest@{address[0]}:{address[1]}//"


class TcpProxy(threading.Thread):
    """A TCP relay to ``target`` that can be cut: ``cut("refuse")`` drops every connection and
    closes each new one at once (the broker is unreachable); ``cut("silent")`` drops them and
    holds new ones without a byte (the broker accepts but never answers); ``restore()``."""

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__(daemon=True)
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        self.mode = "up"
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []

    def run(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                mode = self.mode
                self.sockets.append(client)
            if mode == "refuse":
                client.close()
            elif mode == "up":
                threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        with self.lock:
            self.sockets.append(upstream)
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()

    def cut(self, mode: str) -> None:
        with self.lock:
            self.mode = mode
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            _close(sock)

    def restore(self) -> None:
        with self.lock:
            self.mode = "up"
            silent, self.sockets = self.sockets, []
        for sock in silent:  # connections held silent are dropped; their owners reconnect
            _close(sock)

    def stop(self) -> None:
        self.cut("refuse")
        self.listener.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
