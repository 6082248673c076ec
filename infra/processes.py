"""Server processes seen from outside: liveness, command line, parent death, log tail."""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True if pid exists and is not a zombie (an unreaped zombie holds no sockets)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # Field 3 follows the parenthesised command name, which may itself contain spaces.
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def pid_cmdline(pid: int) -> str:
    """The process's command line, arguments joined by spaces; "" if it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


_PR_SET_PDEATHSIG = 1
try:
    # Looked up here, not in the forked child, where only async-signal-safe work belongs.
    _prctl: Callable[..., int] | None = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux/glibc: no parent-death signal
    _prctl = None


def die_with_parent_preexec() -> None:
    """preexec_fn: ask Linux to SIGKILL the child when the thread that forked it dies.

    Test sessions that are killed hard (SIGKILL, OOM) cannot run their finalizers;
    this makes sure their JVMs do not outlive them. Note it is the forking *thread*
    that counts, so start servers from a thread that outlives them (pytest's main one).
    """
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log (read from its last 16 KiB); "(no log)" if unreadable."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
