"""The JDK that runs the servers."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from infra.errors import InfraError


def java() -> str:
    """The java binary: ``$JAVA_HOME/bin/java``, else the one on PATH.

    Raises InfraError if there is none. Does not block.
    """
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise InfraError("java not found (need JDK 17+ on PATH or JAVA_HOME)")
    return found


def jdk_tag() -> str:
    """Short id of the JDK in use: a CDS archive only fits the JVM build that wrote it."""
    binary = Path(os.path.realpath(java()))
    libjvm = binary.parent.parent / "lib" / "server" / "libjvm.so"
    probe = libjvm if libjvm.is_file() else binary
    st = probe.stat()
    return hashlib.sha256(f"{probe}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
