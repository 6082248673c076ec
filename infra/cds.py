"""Class-data-sharing archives that let the servers' JVMs start about twice as fast."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from infra.errors import InfraError
from infra.paths import JARS_DIR
from infra.servers import KafkaServer, ZooKeeperServer


def build_cds(jars_dir: Path = JARS_DIR, *, quiet: bool = True) -> None:
    """Train a class-data-sharing archive per server: start it once, stop it cleanly,
    and let the JVM dump the classes it loaded. Later starts map that archive and come
    up roughly twice as fast (Kafka ~5 s -> ~2.5 s on two cores).

    Idempotent (skips archives that exist for the current JDK). Best effort: blocks
    ~10 s when it has work, prints a warning on failure and never raises, since the
    servers run fine without an archive.
    """
    for cls in (ZooKeeperServer, KafkaServer):
        with tempfile.TemporaryDirectory(prefix=f"infra-cds-{cls.name}-") as tmp:
            server = cls(tmp, jars_dir=jars_dir)
            target = server.cds_archive
            if target.is_file() or not any(server.jars.glob("*.jar")):
                continue
            dump = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            server._cds_dump = dump
            started = time.monotonic()
            try:
                server.start()
                server.stop(timeout=30)  # the archive is written during a clean exit
                if dump.is_file():
                    os.replace(dump, target)  # atomic: concurrent readers see all or nothing
                    if not quiet:
                        print(f"{cls.name}: CDS archive built in {time.monotonic() - started:.0f}s")
                else:
                    print(f"infra: warning: {cls.name} wrote no CDS archive", file=sys.stderr)
            except InfraError as e:
                print(f"infra: warning: no CDS archive for {cls.name}: {e}", file=sys.stderr)
            finally:
                server.kill()
                dump.unlink(missing_ok=True)
