"""The audit log: one JSON line per accepted or denied change, for the people who ask
"who deleted that subject?".

    audit = AuditLog("/var/log/schema-registry/audit.log")   # or "stderr"
    audit.record(AuditEvent(principal="alice", ...))
    audit.close()

Each line says who (principal, how they authenticated), from where (client address;
the follower that forwarded the write, when one did), what (operation, resource,
method and target), when (UTC, ISO 8601) and the result (`accepted` for a 2xx,
`denied` when authentication or authorization refused it, `failed` otherwise, with
the status). Lines are written by a background thread (logging's QueueListener), so
recording one never waits on the disk; `close()` writes what is queued.
"""
from __future__ import annotations

import logging
import logging.handlers
import queue
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import orjson


@dataclass(frozen=True)
class AuditEvent:
    principal: str
    authentication: str  # BASIC, BEARER, CERTIFICATE, ANONYMOUS, or empty when unauthenticated
    client: str
    operation: str  # write, delete, config, mode, import (a refused forwarded identity's: any)
    resource: str  # subject:<name>, schema:<id> or global
    method: str
    target: str  # path and query as sent
    status: int
    result: str  # accepted, denied or failed
    node: str  # the node that logged it
    forwarded_by: str = ""
    # A forwarded identity refused as untrusted: the name it claimed (never believed),
    # and why it was refused. Its `principal` stays empty: nobody was authenticated.
    claimed: str = ""
    reason: str = ""


class AuditLog:
    def __init__(self, destination: str) -> None:
        handler: logging.Handler
        if destination == "stderr":
            handler = logging.StreamHandler(sys.stderr)
        else:
            handler = logging.FileHandler(destination, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        # A logger of its own, outside logging's global tree: nothing else writes here,
        # and these lines never reach the application's handlers.
        self._logger = logging.Logger("registry.audit", logging.INFO)
        self._logger.addHandler(logging.handlers.QueueHandler(self._queue))
        self._listener = logging.handlers.QueueListener(self._queue, handler)
        self._handler = handler
        self._listener.start()

    def record(self, event: AuditEvent) -> None:
        """Queue one line. Never blocks."""
        line = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                **asdict(event)}
        self._logger.info(orjson.dumps(line).decode("utf-8"))

    def close(self) -> None:
        """Write every queued line and release the file. Blocks until done."""
        self._listener.stop()
        self._handler.close()
