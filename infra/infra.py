#!/usr/bin/env python3
"""Local, real Apache Kafka (KRaft) and Apache ZooKeeper for development, tests and CI.

No Docker: the servers are the official jars from Maven Central (see ``infra/pom.xml``),
run as plain JVM processes bound to 127.0.0.1 on free ports. Standard library only,
because this runs before any virtualenv exists.

Command line (wired to make targets by the Makefile)::

    python3 infra/infra.py fetch    # mvn -> .infra/jars/{kafka,zookeeper,spark} (make infra-fetch)
    python3 infra/infra.py up       # start both under .infra/run/          (make infra-up)
    python3 infra/infra.py down     # stop both, keep logs and data          (make infra-down)
    python3 infra/infra.py status   # exit 0 only if both are up and healthy

Python API (used by ``tests/integration/conftest.py``)::

    zk = ZooKeeperServer(tmp / "zk"); zk.start()        # zk.connect == "127.0.0.1:PORT"
    kafka = KafkaServer(tmp / "kafka"); kafka.start()   # kafka.bootstrap == "127.0.0.1:PORT"
    kafka.restart()                                      # same port, same data
    kafka.stop(); zk.stop()

Every server runs in its own process group (its pid is the group id) so that stopping
it never touches the caller's group.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
POM = Path(__file__).resolve().parent / "pom.xml"
SPARK_POM = Path(__file__).resolve().parent / "spark-pom.xml"
INFRA_DIR = ROOT / ".infra"
JARS_DIR = INFRA_DIR / "jars"
RUN_DIR = INFRA_DIR / "run"
HOST = "127.0.0.1"

# Profiles in infra/pom.xml; each resolves into JARS_DIR/<profile>.
COMPONENTS = ("kafka", "zookeeper")
# Not a server: Spark's Kafka and Avro connectors for registry/spark, handed to a
# SparkSession through spark.jars (profile "spark" in infra/spark-pom.xml).
SPARK_COMPONENT = "spark"
_POMS = {"kafka": POM, "zookeeper": POM, SPARK_COMPONENT: SPARK_POM}
_FETCH_MARKER = ".fetched"


class InfraError(RuntimeError):
    """A server could not be fetched, started, probed or stopped."""


# --------------------------------------------------------------------------- fetch


def _pom_digest(component: str) -> str:
    return hashlib.sha256(_POMS[component].read_bytes()).hexdigest()


def jars_ready(jars_dir: Path = JARS_DIR, components: tuple[str, ...] = COMPONENTS) -> bool:
    """True when every component's jars were fetched completely from its current pom.

    ``components`` defaults to the servers; pass ``(SPARK_COMPONENT,)`` for Spark's.
    Does not block and does not raise.
    """
    try:
        return all(
            (jars_dir / c / _FETCH_MARKER).read_text().strip() == _pom_digest(c)
            for c in components
        )
    except OSError:
        return False


def fetch(
    jars_dir: Path = JARS_DIR,
    *,
    quiet: bool = True,
    components: tuple[str, ...] = (*COMPONENTS, SPARK_COMPONENT),
) -> None:
    """Resolve Kafka's and ZooKeeper's runtime classpaths, and Spark's connector jars,
    from Maven Central with mvn.

    Idempotent: a component whose folder was completed from the same pom is skipped.
    Each component resolves into a staging folder that is renamed into place only after
    mvn succeeded, so an interrupted fetch never leaves a half-filled classpath behind.

    Blocks for as long as mvn runs (tens of seconds cold, ~0 warm).
    Raises InfraError if mvn is missing or fails (its output is included).
    """
    mvn = shutil.which("mvn")
    jars_dir.mkdir(parents=True, exist_ok=True)
    for component in components:
        digest = _pom_digest(component)
        dest = jars_dir / component
        marker = dest / _FETCH_MARKER
        if marker.is_file() and marker.read_text().strip() == digest:
            if not quiet:
                print(f"{component}: already fetched in {dest}")
            continue
        if mvn is None:
            raise InfraError("mvn not found on PATH; install Maven 3.8+ and a JDK 17+")
        staging = jars_dir / f".staging-{component}"
        shutil.rmtree(staging, ignore_errors=True)
        # One line even when quiet: a cold fetch takes a minute and would look hung.
        print(f"infra: fetching {component} jars with mvn ...", file=sys.stderr, flush=True)
        cmd = [
            mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(_POMS[component]), "-P", component,
            f"-Djars.dir={staging}", "dependency:copy-dependencies",
        ]
        started = time.monotonic()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        produced = staging / component
        if res.returncode != 0 or not any(produced.glob("*.jar")):
            output = re.sub(r"\x1b\[[0-9;]*m", "", res.stdout)  # mvn colours even with -B
            tail = "\n".join(output.strip().splitlines()[-40:])
            shutil.rmtree(staging, ignore_errors=True)
            raise InfraError(
                f"mvn failed to fetch {component} (exit {res.returncode}):\n"
                f"  {' '.join(cmd)}\n{tail}"
            )
        # Replace the whole folder so jars from an older pom cannot linger on the classpath.
        shutil.rmtree(dest, ignore_errors=True)
        produced.rename(dest)
        shutil.rmtree(staging, ignore_errors=True)
        marker.write_text(digest + "\n")
        if not quiet:
            n = len(list(dest.glob("*.jar")))
            print(f"{component}: fetched {n} jars into {dest} in {time.monotonic() - started:.0f}s")


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


# --------------------------------------------------------------------------- helpers


def free_port(reserved: set[int] | None = None) -> int:
    """Return a TCP port on 127.0.0.1 that the kernel just reported as free.

    There is a short race until the server binds it; callers retry start-up on a
    bind failure. Ports in ``reserved`` are never returned. Does not block.
    """
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if not reserved or port not in reserved:
            return port
    raise InfraError("could not find a free port")


def port_is_free(port: int) -> bool:
    """True if nothing listens on 127.0.0.1:port and it can be bound. Does not block."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise InfraError("java not found (need JDK 17+ on PATH or JAVA_HOME)")
    return java


def _jdk_tag() -> str:
    """Short id of the JDK in use: a CDS archive only fits the JVM build that wrote it."""
    java = Path(os.path.realpath(_java()))
    libjvm = java.parent.parent / "lib" / "server" / "libjvm.so"
    probe = libjvm if libjvm.is_file() else java
    st = probe.stat()
    return hashlib.sha256(f"{probe}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]


def _pid_alive(pid: int) -> bool:
    """True if pid exists and is not a zombie (an unreaped zombie holds no sockets)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # Field 3 follows the parenthesised command name, which may itself contain spaces.
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def _pid_cmdline(pid: int) -> str:
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


def _die_with_parent() -> None:
    """preexec_fn: ask Linux to SIGKILL the child when the thread that forked it dies.

    Test sessions that are killed hard (SIGKILL, OOM) cannot run their finalizers;
    this makes sure their JVMs do not outlive them. Note it is the forking *thread*
    that counts, so start servers from a thread that outlives them (pytest's main one).
    """
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------- servers


class JavaServer:
    """One JVM server process whose files all live under ``workdir``.

    Files: ``<workdir>/<name>/`` holds configuration and data, ``<workdir>/<name>.log``
    the process's stdout+stderr (appended across restarts), ``<workdir>/<name>.json``
    its pid and ports so that another process (``infra.py down``) can find it.
    """

    name = "server"
    main_class = ""
    jar_component = ""
    default_heap = "256m"
    start_timeout = 60.0

    def __init__(
        self,
        workdir: Path | str,
        *,
        jars_dir: Path = JARS_DIR,
        heap: str | None = None,
        die_with_parent: bool = True,
    ) -> None:
        """Describe a server; nothing starts until ``start()``.

        ``die_with_parent``: SIGKILL the JVM if the thread that started it dies (right
        for tests; the CLI passes False because its servers outlive it).
        """
        self.workdir = Path(workdir).resolve()
        self.home = self.workdir / self.name
        self.log_path = self.workdir / f"{self.name}.log"
        self.state_path = self.workdir / f"{self.name}.json"
        # Absolute: a CDS archive only matches the exact class path it was built with.
        self.jars = Path(jars_dir).resolve() / self.jar_component
        self.heap = heap or self.default_heap
        self.die_with_parent = die_with_parent
        self.port = 0
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        # Set only by build_cds: where this run dumps its loaded classes at exit.
        self._cds_dump: Path | None = None

    # -- to be provided by subclasses

    def _ports(self) -> dict[str, int]:
        raise NotImplementedError

    def _set_ports(self, ports: dict[str, int]) -> None:
        raise NotImplementedError

    def _choose_ports(self) -> None:
        raise NotImplementedError

    def _prepare(self) -> list[str]:
        """Write configuration; return JVM options and main-class arguments."""
        raise NotImplementedError

    def probe(self, timeout: float = 2.0) -> bool:
        """True if the server answers a real client request now. Blocks up to timeout."""
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        return f"{HOST}:{self.port}"

    # -- state file

    def _save_state(self) -> None:
        state = {"pid": self.pid, **self._ports(), **self._extra_state()}
        tmp = self.state_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.state_path)

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        pass

    def load_state(self) -> bool:
        """Adopt pid and ports recorded by an earlier start (possibly by another process).

        Returns False if there is no state file. Does not block; does not raise.
        """
        try:
            state = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return False
        self.pid = state.get("pid")
        self._set_ports({k: int(v) for k, v in state.items() if k.endswith("port")})
        self._load_extra_state(state)
        return True

    # -- lifecycle

    def is_running(self) -> bool:
        """True if our JVM is alive (not necessarily serving yet). Does not block."""
        if self._proc is not None:
            return self._proc.poll() is None
        if not self.pid or not _pid_alive(self.pid):
            return False
        # The pid may have been reused by an unrelated process since the state was
        # written: it is ours only if it runs our main class from our directory.
        cmd = _pid_cmdline(self.pid)
        return self.main_class in cmd and str(self.home) in cmd

    def is_healthy(self) -> bool:
        """Running and answering clients. Blocks up to ~2 s."""
        return self.is_running() and self.probe()

    def start(self, timeout: float | None = None) -> None:
        """Start the JVM and block until it serves clients.

        Ports chosen earlier (by a previous start or ``load_state``) are kept if they
        are still free, so ``restart()`` comes back on the same endpoint.

        Raises InfraError if jars are missing, the process exits early, or it is not
        serving within ``timeout`` seconds (the process is killed then; the error holds
        the log's tail).
        """
        if self.is_running():
            raise InfraError(f"{self.name} is already running (pid {self.pid})")
        start_all([self], timeout)

    def _launch(self) -> None:
        """Write configuration (formatting storage if needed) and spawn the JVM.

        Raises InfraError if the jars are missing or storage formatting fails.
        """
        if not any(self.jars.glob("*.jar")):
            raise InfraError(f"no jars in {self.jars}: run `make infra-fetch` first")
        self.home.mkdir(parents=True, exist_ok=True)
        self._spawn(self._prepare())

    def _lost_port_race(self) -> bool:
        """True if the last start failed because one of its ports was taken."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_offset)
                text = f.read()
        except OSError:
            return False
        return b"Address already in use" in text or b"BindException" in text

    def _spawn(self, args: list[str]) -> None:
        # The log is appended across restarts; keep one old generation past 50 MB.
        with contextlib.suppress(OSError):
            if self.log_path.stat().st_size > 50 * 1024 * 1024:
                self.log_path.replace(self.log_path.with_name(self.log_path.name + ".1"))
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            log.write(f"\n===== infra.py: starting {self.name} at {time.ctime()} =====\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                [_java(), *args],
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Own process group: stop() signals the group, never the caller's.
                start_new_session=True,
                preexec_fn=_die_with_parent if self.die_with_parent else None,
            )
        self.pid = self._proc.pid
        self._save_state()

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.is_running():
                raise InfraError(
                    f"{self.name} exited during start-up; see {self.log_path}:\n"
                    f"{_log_tail(self.log_path)}"
                )
            if self.probe(timeout=1.0):
                return
            if time.monotonic() > deadline:
                raise InfraError(
                    f"{self.name} did not serve clients within {timeout:.0f}s; "
                    f"see {self.log_path}:\n{_log_tail(self.log_path)}"
                )
            time.sleep(0.1)

    def _signal(self, sig: int) -> None:
        if not self.pid:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(self.pid) == self.pid:
                os.killpg(self.pid, sig)
            else:
                os.kill(self.pid, sig)

    def _wait_exit(self, timeout: float) -> bool:
        if self._proc is not None:
            try:
                self._proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while self.is_running():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the process group, SIGKILL it if still alive after ``timeout``.

        Idempotent: stopping a stopped server does nothing. Blocks until the JVM is
        gone. Raises InfraError only if even SIGKILL did not end it within 10 s.
        """
        if self.is_running():
            self._signal(signal.SIGTERM)
            if not self._wait_exit(timeout):
                self.kill()
                return
        self._reap()

    def kill(self) -> None:
        """SIGKILL the process group now (a crash, as far as the server can tell).

        Blocks until the JVM is gone; raises InfraError if it survives 10 s.
        """
        if self.is_running():
            self._signal(signal.SIGKILL)
            if not self._wait_exit(10.0):
                raise InfraError(f"{self.name} (pid {self.pid}) survived SIGKILL")
        self._reap()

    def _reap(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(Exception):
                self._proc.wait(timeout=0)
        self._proc = None

    def restart(self, timeout: float | None = None, *, hard: bool = False) -> None:
        """Stop (SIGTERM, or SIGKILL if ``hard``) and start again on the same ports and data.

        Blocks until serving again. Raises InfraError like ``start()``, and also if the
        old ports are not free again within 10 s (clients hold the old endpoint, so
        moving silently would break them). With ``die_with_parent`` the new JVM is tied
        to the calling thread (see ``_die_with_parent``).
        """
        if hard:
            self.kill()
        else:
            self.stop()
        # A listener socket can linger briefly after the JVM is gone.
        deadline = time.monotonic() + 10
        while not all(port_is_free(p) for p in self._ports().values()):
            if time.monotonic() > deadline:
                raise InfraError(f"{self.name}: ports {self._ports()} still busy after stop")
            time.sleep(0.1)
        start_all([self], timeout, keep_ports=True)

    def __enter__(self) -> JavaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def cds_archive(self) -> Path:
        """This server's class-data-sharing archive for the current JDK (may not exist)."""
        return self.jars / f".cds-{_jdk_tag()}.jsa"

    def _jvm_common(self, heap: str | None = None, *, may_dump: bool = True) -> list[str]:
        flags = [
            f"-Xmx{heap or self.heap}",
            "-XX:+UseSerialGC",  # two cores, small heaps: no GC thread pools needed
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
        ]
        # Loading and verifying thousands of classes is most of a JVM server's start-up;
        # a dynamic CDS archive (see build_cds) maps them in ready-made instead.
        if self._cds_dump is not None and may_dump:
            flags.append(f"-XX:ArchiveClassesAtExit={self._cds_dump}")
        elif self._cds_dump is None and self.cds_archive.is_file():
            flags.append(f"-XX:SharedArchiveFile={self.cds_archive}")
        return [*flags, "-cp", f"{self.jars}/*"]


class ZooKeeperServer(JavaServer):
    """A standalone ZooKeeper (``ZooKeeperServerMain``) on 127.0.0.1.

    ``connect`` is the connect string. The admin HTTP server is off (it would take
    port 8080); the four-letter words ``ruok``, ``srvr``, ``stat``, ``mntr``, ``conf``,
    ``cons`` are on for probes and debugging.
    """

    name = "zookeeper"
    main_class = "org.apache.zookeeper.server.ZooKeeperServerMain"
    jar_component = "zookeeper"
    default_heap = "256m"
    start_timeout = 30.0

    # ZooKeeper's session expiry is measured in ticks: a 500 ms tick lets tests use
    # 1 s sessions (min = 2 ticks) to see leader failover quickly.
    tick_ms = 500

    @property
    def connect(self) -> str:
        return self.endpoint

    def _ports(self) -> dict[str, int]:
        return {"port": self.port}

    def _set_ports(self, ports: dict[str, int]) -> None:
        self.port = ports.get("port", 0)

    def _choose_ports(self) -> None:
        self.port = free_port()

    def _prepare(self) -> list[str]:
        data = self.home / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.home / "zoo.cfg"
        cfg.write_text(
            "\n".join([
                f"tickTime={self.tick_ms}",
                f"dataDir={data}",
                f"clientPort={self.port}",
                f"clientPortAddress={HOST}",
                "maxClientCnxns=0",  # many test clients share 127.0.0.1
                f"minSessionTimeout={2 * self.tick_ms}",
                "maxSessionTimeout=60000",
                "admin.enableServer=false",
                "4lw.commands.whitelist=ruok,srvr,stat,mntr,conf,cons",
                # Throwaway dev/test data: skip the fsync per transaction.
                "forceSync=no",
                "",
            ])
        )
        logback = self.home / "logback.xml"
        logback.write_text(
            '<configuration>\n'
            '  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">\n'
            '    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{36} - %msg%n'
            '</pattern></encoder>\n'
            '  </appender>\n'
            # Every probe's four-letter word would otherwise be logged.
            '  <logger name="org.apache.zookeeper.server.NIOServerCnxn" level="WARN"/>\n'
            '  <root level="INFO"><appender-ref ref="OUT"/></root>\n'
            '</configuration>\n'
        )
        return [
            "-Xms32m",
            *self._jvm_common(),
            f"-Dlogback.configurationFile={logback}",
            "-Dzookeeper.forceSync=no",
            "-Dzookeeper.admin.enableServer=false",
            self.main_class,
            str(cfg),
        ]

    def four_letter(self, word: str, timeout: float = 2.0) -> str:
        """Send a ZooKeeper four-letter word and return the reply.

        Blocks up to ``timeout``; raises OSError if the server does not answer.
        """
        with socket.create_connection((HOST, self.port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def probe(self, timeout: float = 2.0) -> bool:
        # `ruok` answers imok even before the server is serving; `srvr` reports a Mode
        # only once it is.
        if not self.port:
            return False
        try:
            return "Mode: standalone" in self.four_letter("srvr", timeout)
        except OSError:
            return False


class KafkaServer(JavaServer):
    """A single-node KRaft Kafka (``process.roles=broker,controller``) on 127.0.0.1.

    ``bootstrap`` is the client endpoint. Storage is formatted on first start with a
    random cluster id and kept across ``restart()``. Tuned for single-node tests:
    replication factors 1, one partition for the internal topics, no initial
    rebalance delay; the log cleaner stays on so that compaction works, and
    transactions work (``__transaction_state`` with RF 1 / min ISR 1).
    """

    name = "kafka"
    main_class = "kafka.Kafka"
    jar_component = "kafka"
    default_heap = "512m"
    start_timeout = 90.0
    node_id = 1

    def __init__(self, workdir: Path | str, **kwargs: Any) -> None:
        super().__init__(workdir, **kwargs)
        self.controller_port = 0
        self.cluster_id = ""
        self.extra_config: dict[str, str] = {}

    @property
    def bootstrap(self) -> str:
        return self.endpoint

    def _ports(self) -> dict[str, int]:
        return {"port": self.port, "controller_port": self.controller_port}

    def _set_ports(self, ports: dict[str, int]) -> None:
        self.port = ports.get("port", 0)
        self.controller_port = ports.get("controller_port", 0)

    def _choose_ports(self) -> None:
        self.port = free_port()
        self.controller_port = free_port({self.port})

    def _extra_state(self) -> dict[str, Any]:
        return {"cluster_id": self.cluster_id}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.cluster_id = state.get("cluster_id", "")

    def _config(self) -> dict[str, str]:
        data = self.home / "data"
        cfg = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            # A static one-voter quorum: no --standalone / dynamic-quorum bootstrap
            # needed at format time, and the node can come back on another port.
            "controller.quorum.voters": f"{self.node_id}@{HOST}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": "1",
            # One partition instead of 50: creating the internal topics is then instant.
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Compaction must work; a small dedupe buffer keeps it inside a small heap,
            # a short backoff lets compaction tests see results quickly.
            "log.cleaner.enable": "true",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            "log.cleaner.backoff.ms": "1000",
            # Two cores: fewer threads than the defaults sized for big servers.
            "num.network.threads": "2",
            "num.io.threads": "4",
            "background.threads": "4",
            "num.recovery.threads.per.data.dir": "1",
            # Get unfenced (ready for clients) sooner after start-up.
            "broker.heartbeat.interval.ms": "500",
            # After a hard kill the old registration blocks re-registration until its
            # session expires (default 9 s): keep restarts quick, with margin for a busy CI.
            "broker.session.timeout.ms": "4000",
            "delete.topic.enable": "true",
        }
        cfg.update(self.extra_config)
        return cfg

    def _prepare(self) -> list[str]:
        props = self.home / "server.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self._config().items()))
        log4j = self.home / "log4j2.properties"
        log4j.write_text(
            "status = warn\n"
            "appender.out.type = Console\n"
            "appender.out.name = OUT\n"
            "appender.out.layout.type = PatternLayout\n"
            "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.out.ref = OUT\n"
            # Per-request and per-partition state logs are noise for our purposes.
            "logger.request.name = kafka.request.logger\n"
            "logger.request.level = WARN\n"
            "logger.state.name = state.change.logger\n"
            "logger.state.level = WARN\n"
            # Full config dumps (hundreds of lines, several per start); see server.properties.
            "logger.config.name = org.apache.kafka.common.config.AbstractConfig\n"
            "logger.config.level = WARN\n"
        )
        log_opt = f"-Dlog4j2.configurationFile={log4j}"
        self._format(props, log_opt)
        return [
            "-Xms128m", *self._jvm_common(), log_opt,
            # Kafka flushes and shuts down logging itself; log4j's own hook only warns.
            "-Dlog4j2.shutdownHookEnabled=false",
            self.main_class, str(props),
        ]

    def _format(self, props: Path, log_opt: str) -> None:
        """Format KRaft storage once (meta.properties marks it done). Blocks ~2 s."""
        meta = self.home / "data" / "meta.properties"
        if meta.is_file():
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    self.cluster_id = line.split("=", 1)[1].strip()
            return
        if not self.cluster_id:
            # Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding.
            self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        cmd = [
            _java(),
            # A short-lived tool: the C1 compiler alone starts faster.
            "-XX:TieredStopAtLevel=1",
            *self._jvm_common("128m", may_dump=False),
            log_opt,
            "kafka.tools.StorageTool", "format",
            "-t", self.cluster_id, "-c", str(props), "--ignore-formatted",
        ]
        with open(self.log_path, "ab") as log:
            log.write(b"\n===== infra.py: formatting KRaft storage =====\n")
            log.flush()
            res = subprocess.run(
                cmd, cwd=self.home, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, timeout=120,
                preexec_fn=_die_with_parent if self.die_with_parent else None,
            )
        if res.returncode != 0:
            raise InfraError(
                f"kafka storage format failed (exit {res.returncode}); see {self.log_path}:\n"
                f"{_log_tail(self.log_path)}"
            )

    def metadata(self, timeout: float = 2.0) -> dict[str, Any]:
        """Ask the broker for cluster metadata over the Kafka wire protocol.

        Returns ``{"brokers": [(node_id, host, port)], "cluster_id": str|None,
        "controller_id": int}``. Blocks up to ``timeout``; raises OSError on network
        failure and InfraError if the broker cannot answer Metadata v4.
        """
        with socket.create_connection((HOST, self.port), timeout=timeout) as s:
            s.settimeout(timeout)
            return _kafka_metadata(s)

    def probe(self, timeout: float = 2.0) -> bool:
        # Serving means: our broker (same cluster id) is registered, unfenced (only
        # unfenced brokers are listed) and there is an active controller.
        if not self.port:
            return False
        try:
            md = self.metadata(timeout)
        except (OSError, InfraError, struct.error):
            return False
        return (
            md["controller_id"] >= 0
            and (not self.cluster_id or md["cluster_id"] == self.cluster_id)
            and any(b[2] == self.port for b in md["brokers"])
        )


# --------------------------------------------------------------------------- Kafka wire


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf += chunk
    return bytes(buf)


def _kafka_call(s: socket.socket, api_key: int, version: int, corr: int, body: bytes) -> bytes:
    client_id = b"infra-probe"
    # Request header v1 (non-flexible): api_key, api_version, correlation_id, client_id.
    msg = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id + body
    s.sendall(struct.pack(">i", len(msg)) + msg)
    (size,) = struct.unpack(">i", _recv_exact(s, 4))
    resp = _recv_exact(s, size)
    if struct.unpack_from(">i", resp)[0] != corr:
        raise InfraError("kafka probe: correlation id mismatch")
    return resp[4:]  # response header v0 is just the correlation id


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> Any:
        vals = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return vals[0] if len(vals) == 1 else vals

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        self.pos += n
        return self.data[self.pos - n : self.pos].decode()


_API_METADATA, _API_VERSIONS = 3, 18
_METADATA_VERSION = 4  # the oldest version Kafka 4.x still accepts (KIP-896)


def _kafka_metadata(s: socket.socket) -> dict[str, Any]:
    # ApiVersions v0 is answered by every broker version; use it to make sure the
    # broker still speaks the Metadata version we encode by hand.
    r = _Reader(_kafka_call(s, _API_VERSIONS, 0, 1, b""))
    if r.take(">h") != 0:
        raise InfraError("kafka probe: ApiVersions failed")
    ranges = {}
    for _ in range(r.take(">i")):
        key, lo, hi = r.take(">hhh")
        ranges[key] = (lo, hi)
    lo, hi = ranges.get(_API_METADATA, (1, 0))
    if not lo <= _METADATA_VERSION <= hi:
        raise InfraError(f"kafka probe: broker does not accept Metadata v{_METADATA_VERSION}")
    # Metadata v4 body: topics = [] (none, we only want brokers), allow_auto_create = false.
    r = _Reader(_kafka_call(s, _API_METADATA, _METADATA_VERSION, 2, struct.pack(">ib", 0, 0)))
    r.take(">i")  # throttle_time_ms
    brokers = []
    for _ in range(r.take(">i")):
        node_id = r.take(">i")
        host = r.string()
        port = r.take(">i")
        r.string()  # rack
        brokers.append((node_id, host, port))
    cluster_id = r.string()
    controller_id = r.take(">i")
    return {"brokers": brokers, "cluster_id": cluster_id, "controller_id": controller_id}


# --------------------------------------------------------------------------- API


@contextlib.contextmanager
def running(
    workdir: Path | str, *, kafka: bool = True, zookeeper: bool = True
) -> Iterator[tuple[KafkaServer | None, ZooKeeperServer | None]]:
    """Start the requested servers in ``workdir`` and stop them on exit, whatever happens.

    Blocks until both serve (seconds); raises InfraError if either fails to start.
    """
    zk = ZooKeeperServer(Path(workdir)) if zookeeper else None
    kf = KafkaServer(Path(workdir)) if kafka else None
    try:
        start_all([s for s in (zk, kf) if s])
        yield kf, zk
    finally:
        for server in (kf, zk):
            if server:
                server.stop()


def start_all(
    servers: list[JavaServer], timeout: float | None = None, *, keep_ports: bool = False
) -> None:
    """Start several servers concurrently (their JVMs warm up in parallel).

    A server keeps the ports it had if they are free (or always, with ``keep_ports``);
    otherwise it gets fresh ones, and again if another process grabbed them before the
    JVM could bind. Already running servers are left alone. Blocks until all serve.
    Raises InfraError on the first failure, after killing the ones this call started.
    """
    started: list[JavaServer] = []
    try:
        for server in servers:
            if server.is_running():
                continue
            ports = server._ports().values()
            if not all(ports) or (not keep_ports and not all(map(port_is_free, ports))):
                server._choose_ports()
            server._launch()
            started.append(server)
        for server in started:
            for attempt in range(3):
                try:
                    server._wait_ready(timeout or server.start_timeout)
                    break
                except InfraError:
                    # free_port() cannot reserve a port: losing it to another process
                    # (a parallel test session, say) is retried on new ports.
                    if keep_ports or attempt == 2 or not server._lost_port_race():
                        raise
                    server.kill()
                    server._choose_ports()
                    server._launch()
    except BaseException:
        for server in started:
            with contextlib.suppress(Exception):
                server.kill()
        raise


# --------------------------------------------------------------------------- CLI


def _cli_servers() -> tuple[ZooKeeperServer, KafkaServer]:
    zk = ZooKeeperServer(RUN_DIR, die_with_parent=False)
    kf = KafkaServer(RUN_DIR, die_with_parent=False)
    zk.load_state()
    kf.load_state()
    return zk, kf


def _write_endpoints(zk: ZooKeeperServer, kf: KafkaServer) -> str:
    text = f"KAFKA_BOOTSTRAP={kf.bootstrap}\nZOOKEEPER_CONNECT={zk.connect}\n"
    (RUN_DIR / "endpoints.env").write_text(text)
    return text


def cmd_fetch(args: argparse.Namespace) -> int:
    fetch(quiet=not args.verbose)
    build_cds(quiet=not args.verbose)
    if args.verbose:
        print(f"jars ready in {JARS_DIR}")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    if not jars_ready():
        print(f"jars missing or stale in {JARS_DIR}: run `make infra-fetch` first", file=sys.stderr)
        return 2
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    zk, kf = _cli_servers()
    if args.fresh:
        for server in (zk, kf):
            server.stop()
            shutil.rmtree(server.home, ignore_errors=True)
            server.state_path.unlink(missing_ok=True)
        zk, kf = _cli_servers()
    todo: list[JavaServer] = []
    for server in (zk, kf):
        if server.is_running():
            if server.probe(timeout=5.0):
                continue
            # Alive but not answering: a wedged leftover; replace it.
            server.stop(timeout=15)
        todo.append(server)
    started = time.monotonic()
    start_all(todo)
    if todo:
        names = ", ".join(s.name for s in todo)
        print(f"started {names} in {time.monotonic() - started:.1f}s (logs: {RUN_DIR}/*.log)",
              file=sys.stderr)
    print(_write_endpoints(zk, kf), end="")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    zk, kf = _cli_servers()
    for server in (kf, zk):
        was_running = server.is_running()
        server.stop(timeout=args.timeout)
        print(f"{server.name}: {'stopped' if was_running else 'not running'}")
    (RUN_DIR / "endpoints.env").unlink(missing_ok=True)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    zk, kf = _cli_servers()
    ok = True
    for server in (zk, kf):
        if not server.is_running():
            print(f"{server.name}: down")
            ok = False
        elif server.probe():
            print(f"{server.name}: up {server.endpoint} (pid {server.pid})")
        else:
            print(f"{server.name}: running but not answering {server.endpoint} (pid {server.pid})")
            ok = False
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "fetch", help="download the servers' and Spark's connector jars with mvn into .infra/jars"
    )
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=cmd_fetch)
    p = sub.add_parser("up", help="start ZooKeeper and Kafka under .infra/run")
    p.add_argument("--fresh", action="store_true", help="wipe their data first")
    p.set_defaults(func=cmd_up)
    p = sub.add_parser("down", help="stop them (logs and data are kept)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL")
    p.set_defaults(func=cmd_down)
    p = sub.add_parser("status", help="exit 0 if both are up")
    p.set_defaults(func=cmd_status)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InfraError as e:
        print(f"infra: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
