"""The registry's processes: granian as the supervisor, the node and its listeners in a worker.

Granian (chosen by `bench/wsgi_servers.py` when it also served HTTP) runs a supervisor
process and a worker process. The worker is forked, so the node (log, reader thread,
cache) is built in the worker by `build`, never before the fork. Every listener, http
and https, is served in the worker by `registry.http.listener` (HTTP/1.1 parsed by
httptools on a uvloop event loop; that module says why not granian's own HTTP). Their
sockets are bound here in the supervisor, before the fork, so a busy port is refused at
start and a restarted worker serves the same sockets. Granian itself listens on a Unix
socket in a private directory that nothing connects to: it is the process supervisor
only. Two details make the pair behave like one process:
- the worker asks the kernel to kill it when the supervisor dies, so `kill -9` of the
  registry's pid really stops the node (failover tests depend on it);
- the worker runs `close` after granian's serving loop returns on SIGTERM, so the node
  shuts down cleanly (leaving its election, flushing its log).
"""
from __future__ import annotations

import ctypes
import errno
import gc
import importlib
import logging
import os
import shutil
import signal
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from registry.collector import IdleFullCollections
from registry.http.app import build_asgi
from registry.http.listener import Listeners
from registry.http.security.guard import check_files
from registry.http.security.tls import server_context
from registry.node import build_node
from registry.schema_types import SCHEMA_TYPES
from registry.settings import ConfigError, Listener, Settings
from registry.zookeeper_options import kazoo_options
from store.log import LogUnavailable

log = logging.getLogger(__name__)

App = Callable[..., Any]
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the worker outlives a killed supervisor
        log.warning("cannot tie the worker's life to the supervisor on this platform")


class AddressInUse(OSError):
    """Another process listens on the port already."""


# Granian's own log lines (a worker that died, a respawn) go through ours.
_GRANIAN_LOGGING = {
    "handlers": {},
    "loggers": {
        "_granian": {"level": "WARNING", "propagate": True, "handlers": []},
        "granian.access": {"level": "CRITICAL", "propagate": False, "handlers": []},
    },
}


def bind(listener: Listener) -> socket.socket:
    """A listening socket for `listener`. Raises AddressInUse when the port is busy."""
    family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT only, not a listener
        sock.bind((listener.host, listener.port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUse(exc.errno, f"{listener.host}:{listener.port}: address already in use") from None
        raise
    return sock


def serve(build: Callable[[], tuple[App, Callable[[], None]]], uds: Path) -> int:
    """Serve until SIGTERM or SIGINT; returns the exit code. Blocks.

    `build` runs in the worker process and returns the ASGI app and a `close` function
    called when the worker stops. A worker that dies (killed, out of memory) is logged
    and started again, rebuilding the node from the log; one that keeps dying makes
    the registry exit with code 1 and says why. `uds` is where granian listens (nothing
    connects there: the listeners serve every request).
    """
    from granian.constants import Interfaces, Loops
    from granian.server import Server
    from granian.server.mp import MPServer

    closers: list[Callable[[], None]] = []

    def load(_target: str) -> App:
        _die_with_parent()
        app, close = build()
        closers.append(close)
        return app

    def worker(*args: Any, **kwargs: Any) -> None:
        # Granian's own ASGI worker (no lifespan), then our clean-up, in the worker process.
        try:
            MPServer._spawn_asgi_worker(*args, **kwargs)
        finally:
            for close in closers:
                close()

    server = Server(
        "registry:app",  # unused: `load` builds the app
        uds=uds,
        interface=Interfaces.ASGINL,
        loop=Loops.uvloop,  # idles: the listeners have an event loop of their own
        workers=1,
        backlog=2048,
        log_enabled=True,
        log_dictconfig=_GRANIAN_LOGGING,
        respawn_failed_workers=True,
    )
    server.serve(spawn_target=worker, target_loader=load)
    if server.interrupt_children and not server.interrupt_signal:
        log.error("the serving worker died again within seconds of being restarted; exiting")
        return 1
    return 0


def run(settings: Settings) -> int:
    """Serve the node `settings` describe until a signal, then shut down cleanly.
    Blocks. Returns the exit code."""
    listeners = settings.listeners
    try:
        # Refuse unusable key material and security files now, not in the worker.
        check_files(settings)
        kazoo_options(settings.zookeeper_security)
        if any(item.scheme == "https" for item in listeners):
            server_context(settings.tls)
    except ConfigError as exc:
        log.error("cannot start: %s", exc)
        return 2
    sockets: list[tuple[Listener, socket.socket]] = []
    private_dir: str | None = None
    try:
        try:
            for item in listeners:
                sockets.append((item, bind(item)))
        except OSError as exc:
            log.error("cannot listen: %s", exc.strerror or exc)
            return 1
        private_dir = private_socket_dir()
        for item in listeners:
            log.info("serving on %s", item.url)
        code = serve(lambda: build(settings, sockets), Path(private_dir) / _PRIVATE_SOCKET)
    finally:
        for _, sock in sockets:
            sock.close()
        if private_dir is not None:
            shutil.rmtree(private_dir, ignore_errors=True)
    log.info("stopped")
    return code


_PRIVATE_PREFIX = "schema-registry-"
_PRIVATE_SOCKET = "granian.sock"


def private_socket_dir() -> str:
    """A new private directory for granian's Unix socket, named after this process.

    A registry killed with SIGKILL never reaches the `finally` that removes its own, so
    the directories of registries no longer running are removed first: a host whose
    registry is restarted after every kill does not collect them."""
    remove_orphaned_socket_dirs(Path(tempfile.gettempdir()))
    return tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-")


def remove_orphaned_socket_dirs(parent: Path) -> None:
    """Remove `parent`'s private socket directories whose registry's process is gone.

    Only a directory named by `private_socket_dir`, owned by this user and holding at
    most the socket is removed. Nothing connects to that socket (see the module's
    docstring), so even a wrong guess (a pid seen from another pid namespace) costs
    its owner nothing but the directory."""
    for path in parent.glob(f"{_PRIVATE_PREFIX}*-*"):
        pid = path.name[len(_PRIVATE_PREFIX):].partition("-")[0]
        if not (pid.isascii() and pid.isdigit()) or _running(int(pid)):
            continue
        try:
            if (path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid()
                    or any(entry.name != _PRIVATE_SOCKET for entry in path.iterdir())):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's process
        return True
    return True


def import_deferred() -> None:
    """Import what start-up leaves for first use (the JSON Schema and Protobuf types, the
    client that forwards writes to the leader), so that the first request needing one
    does not wait for it. Start-up does not either: a node is ready only once it has
    replayed the log, and every import before then delays it (bench/cold_start.py)."""
    SCHEMA_TYPES.load_all()
    importlib.import_module("registry.http.leader_session")


def settle_after_ready() -> None:
    """What a node does once ready: import what start-up deferred, then freeze what
    exists (`gc.freeze`): the modules, the app, the cache as replayed live as long as
    the process, and without this every full collection traversed them all again,
    21-28 ms each, a stall of every request under way (p99 of the lookup under wrk:
    about 80 ms, 33-38 ms frozen; bench/read_throughput.py). Refcounting still frees
    them when they are replaced. What the node makes from then on is collected in full
    at idle moments (`registry.collector`)."""
    import_deferred()
    gc.freeze()
    IdleFullCollections().start()


def build(settings: Settings, sockets: list[tuple[Listener, socket.socket]] = ()
          ) -> tuple[App, Callable[[], None]]:
    """Build the node and its ASGI app (in the serving process), start the listeners on
    `sockets`; return the app and a closer."""
    try:
        node = build_node(settings)
    except LogUnavailable as exc:  # LogMisconfigured too: a clear message, not a traceback
        log.error("cannot start: %s", exc)
        raise SystemExit(1) from None

    def report_ready() -> None:
        while not node.writer.wait_caught_up(60):
            log.info("still reading the schema log")
        log.info("caught up with the schema log: serving reads")
        while not node.writer.wait_ready(60):
            log.info("waiting for a leader to be elected")
        log.info("ready: a leader is known, serving writes")
        settle_after_ready()

    threading.Thread(target=report_ready, name="readiness", daemon=True).start()
    try:
        bridge = build_asgi(node)
        contexts: dict[str, ssl.SSLContext | None] = {"http": None}
        if any(item.scheme == "https" for item, _ in sockets):
            contexts["https"] = server_context(settings.tls)
    except ConfigError as exc:
        log.error("cannot start: %s", exc)
        node.close()
        raise SystemExit(2) from None
    listeners = Listeners(bridge, [(sock, contexts[item.scheme]) for item, sock in sockets],
                          at_once=bridge.answer_at_once)
    listeners.start()

    def close() -> None:
        listeners.close()
        bridge.close()
        node.close()

    return bridge, close
