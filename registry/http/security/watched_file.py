"""A configuration file read again whenever it changes (users, rules, a JWKS file).

    rules = WatchedFile(path, parse_rules, on_change=memo.clear)
    rules.current      # the latest content that parsed; never None
    rules.close()

The file is watched through its directory with `watchfiles` (inotify on Linux), so an
edit in place, a replacement by rename and Kubernetes' ConfigMap symlink swap are all
seen. A new content that does not parse is logged and ignored: the previous one stays
in force, so a half-written file never opens or closes the door by accident.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

import watchfiles

from registry.settings import ConfigError

log = logging.getLogger(__name__)

T = TypeVar("T")


class WatchedFile(Generic[T]):
    """The parsed content of `path`, kept current by a daemon thread.

    The constructor reads and parses the file once and raises ConfigError if it cannot:
    a node never starts with a file it cannot use. `parse` raises ConfigError (or
    ValueError) for bad content. `on_change` runs on the watching thread after each
    successful reload.
    """

    def __init__(self, path: str, parse: Callable[[bytes], T], *, what: str,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self._path = Path(path).absolute()
        self._parse = parse
        self._what = what
        self._on_change = on_change
        self._seen: tuple[int, int, int] | None = None
        self.reloads = 0
        self.failed_reloads = 0
        try:
            self.current: T = self._read()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{what} {path}: {exc}") from None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watch-{self._path.name}", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        """Stop watching. Blocks until the watching thread has ended (at most ~1 s)."""
        self._stop.set()
        self._thread.join(timeout=2)

    def reload(self) -> bool:
        """Read the file again if it changed; True when a new content took effect.
        Called by the watching thread; tests may call it to skip the wait."""
        try:
            stat = os.stat(self._path)
        except OSError as exc:
            log.error("%s %s cannot be read (%s); keeping the previous content", self._what, self._path, exc)
            return False
        if (stat.st_ino, stat.st_mtime_ns, stat.st_size) == self._seen:
            return False
        try:
            value = self._read()
        except (OSError, ValueError) as exc:
            self.failed_reloads += 1
            log.error("%s %s changed but cannot be used (%s); keeping the previous content",
                      self._what, self._path, exc)
            return False
        self.current = value
        self.reloads += 1
        log.info("%s %s reloaded", self._what, self._path)
        self._on_change()
        return True

    def _read(self) -> T:
        stat = os.stat(self._path)
        with open(self._path, "rb") as handle:
            data = handle.read()
        value = self._parse(data)
        self._seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        return value

    def _watch(self) -> None:
        try:
            for _changes in watchfiles.watch(self._path.parent, stop_event=self._stop, debounce=50, step=50,
                                             rust_timeout=500, yield_on_timeout=True, raise_interrupt=False):
                if self._stop.is_set():
                    return
                # Any change in the directory, and every timeout: compare the file's
                # identity, so a swapped symlink or a missed event is caught too.
                self.reload()
        except Exception:  # the watcher itself failed (directory removed ...): say so, keep serving
            log.exception("stopped watching %s %s for changes", self._what, self._path)
