"""A single elector in its own process, driven by the election tests.

    python -m tests.integration.election.elector_process '<spec JSON>'

Builds the elector described by the spec (see ``specs.build_elector``) and starts
it. Writes one JSON line to stdout per event, with ``t`` = ``time.monotonic()`` (the
same clock as the parent's on Linux): ``elected`` / ``demoted`` from the callbacks, and
``state`` whenever ``is_leader()`` or ``leader()`` changes (sampled every 5 ms). Reading
``close`` on stdin, or end of input, closes the elector and exits 0.
"""
from __future__ import annotations

import json
import logging
import sys
import threading
import time

from tests.integration.election.specs import build_elector

_write_lock = threading.Lock()


def emit(event: str, **fields: object) -> None:
    with _write_lock:
        sys.stdout.write(json.dumps({"event": event, "t": time.monotonic(), **fields}) + "\n")
        sys.stdout.flush()


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    elector = build_elector(json.loads(sys.argv[1]))
    stop = threading.Event()

    def report_state() -> None:
        last = None
        while not stop.wait(0.005):
            leader = elector.leader()
            state = (elector.is_leader(), leader.url if leader else None)
            if state != last:
                emit("state", is_leader=state[0], leader=state[1])
                last = state

    elector.start(lambda: emit("elected"), lambda: emit("demoted"))
    reporter = threading.Thread(target=report_state, name="state-reporter", daemon=True)
    reporter.start()
    for line in sys.stdin:
        if line.strip() == "close":
            break
    elector.close()
    stop.set()
    reporter.join()
    emit("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
