"""The global mode a target had before an import switched it to IMPORT, kept on disk
while the import holds it there.

    journal = ImportJournal.for_target(["http://new:8081"])
    journal.begin("READWRITE")      # before `PUT /mode IMPORT`
    ...                             # SIGKILL here: the file stays
    journal.recorded_mode()         # the re-run reads "READWRITE" and ends with it
    journal.end()                   # once the target's mode is put back

An import that ends, fails or is interrupted puts the target's mode back itself; only one
killed outright (SIGKILL, a crash, a lost machine) cannot, and leaves the target in IMPORT.
The re-run finds the target in IMPORT and cannot tell that from an operator's own IMPORT,
hence this file: one per target (its node URLs), under $XDG_STATE_HOME/schema-registry/imports
(default ~/.local/state/...). Writing it is best effort: without it (a read-only home) an
import works as before, and only a killed one's re-run leaves the target in IMPORT.
"""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

import orjson


def state_directory() -> Path:
    """Where the journals live (XDG Base Directory: state that outlives a run)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "schema-registry" / "imports"


class ImportJournal:
    """The recorded mode of one target. Methods block only on the local file system and
    never raise for it: a journal that cannot be written or read is taken as absent."""

    def __init__(self, path: Path, target: str) -> None:
        self.path = path
        self.target = target

    @classmethod
    def for_target(cls, urls: Sequence[str]) -> ImportJournal:
        """The journal of the registry these node URLs reach (order and trailing slashes aside)."""
        target = ",".join(sorted(url.rstrip("/") for url in urls))
        name = hashlib.sha256(target.encode()).hexdigest()[:24] + ".json"
        return cls(state_directory() / name, target)

    def recorded_mode(self) -> str | None:
        """The mode `begin` recorded for this target, if an import of it has not ended."""
        try:
            entry = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not isinstance(entry, dict) or entry.get("target") != self.target:
            return None  # another target's file under a colliding name, or not ours
        mode = entry.get("mode_before")
        return mode if isinstance(mode, str) and mode != "IMPORT" else None

    def begin(self, mode_before: str) -> None:
        """Record `mode_before`, atomically (a kill mid-write leaves the old file or none)."""
        entry = {"target": self.target, "mode_before": mode_before,
                 "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(orjson.dumps(entry))
            partial.replace(self.path)
        except OSError:
            pass  # best effort, as the module says

    def end(self) -> None:
        """Forget the record: the target's mode is no longer ours to put back."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
