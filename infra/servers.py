"""Kafka (KRaft) and ZooKeeper as plain JVM processes bound to 127.0.0.1 on free ports.

    zk = ZooKeeperServer(tmp / "zk"); zk.start()        # zk.connect == "127.0.0.1:PORT"
    kafka = KafkaServer(tmp / "kafka"); kafka.start()   # kafka.bootstrap == "127.0.0.1:PORT"
    kafka.restart()                                      # same port, same data
    kafka.stop(); zk.stop()

Every server runs in its own process group (its pid is the group id) so that stopping
it never touches the caller's group.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.errors import InfraError
from infra.jvm import java, jdk_tag
from infra.kafka_probe import kafka_metadata
from infra.kafka_uuid import random_uuid
from infra.paths import JARS_DIR
from infra.ports import HOST, free_port, port_is_free
from infra.processes import die_with_parent_preexec, log_tail, pid_alive, pid_cmdline


class JavaServer:
    """One JVM server process whose files all live under ``workdir``.

    Files: ``<workdir>/<name>/`` holds configuration and data, ``<workdir>/<name>.log``
    the process's stdout+stderr (appended across restarts), ``<workdir>/<name>.json``
    its pid and ports so that another process (``python3 -m infra down``) can find it.
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
        if not self.pid or not pid_alive(self.pid):
            return False
        # The pid may have been reused by an unrelated process since the state was
        # written: it is ours only if it runs our main class from our directory.
        cmd = pid_cmdline(self.pid)
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
        # The JVM's own temporary files (Kafka unpacks its lz4 and zstd libraries there)
        # go in the server's home, emptied at every start: a killed JVM never deletes them.
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.tmpdir.mkdir()
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
            log.write(f"\n===== infra: starting {self.name} at {time.ctime()} =====\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                [java(), *args],
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Own process group: stop() signals the group, never the caller's.
                start_new_session=True,
                preexec_fn=die_with_parent_preexec if self.die_with_parent else None,
            )
        self.pid = self._proc.pid
        self._save_state()

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.is_running():
                raise InfraError(
                    f"{self.name} exited during start-up; see {self.log_path}:\n"
                    f"{log_tail(self.log_path)}"
                )
            if self.probe(timeout=1.0):
                return
            if time.monotonic() > deadline:
                raise InfraError(
                    f"{self.name} did not serve clients within {timeout:.0f}s; "
                    f"see {self.log_path}:\n{log_tail(self.log_path)}"
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
        to the calling thread (see ``die_with_parent_preexec``).
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
    def tmpdir(self) -> Path:
        return self.home / "tmp"

    @property
    def cds_archive(self) -> Path:
        """This server's class-data-sharing archive for the current JDK (may not exist)."""
        return self.jars / f".cds-{jdk_tag()}.jsa"

    def _jvm_common(self, heap: str | None = None, *, may_dump: bool = True) -> list[str]:
        flags = [
            f"-Xmx{heap or self.heap}",
            "-XX:+UseSerialGC",  # two cores, small heaps: no GC thread pools needed
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Djava.io.tmpdir={self.tmpdir}",
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

    def __init__(self, workdir: Path | str, *, secure: bool = False, extra_config: dict[str, str] | None = None,
                 jvm_options: list[str] | None = None, **kwargs: Any) -> None:
        """``secure`` adds a TLS client port (``secure_connect``) served by Netty; its
        ``ssl.*`` settings go in ``extra_config`` (zoo.cfg lines), with ``jvm_options``
        for what only system properties set (a JAAS file for SASL, say)."""
        super().__init__(workdir, **kwargs)
        self.secure = secure
        self.secure_port = 0
        self.extra_config = dict(extra_config or {})
        self.jvm_options = list(jvm_options or [])

    @property
    def connect(self) -> str:
        return self.endpoint

    @property
    def secure_connect(self) -> str:
        return f"{HOST}:{self.secure_port}"

    def _ports(self) -> dict[str, int]:
        return {"port": self.port, **({"secure_port": self.secure_port} if self.secure else {})}

    def _set_ports(self, ports: dict[str, int]) -> None:
        self.port = ports.get("port", 0)
        self.secure_port = ports.get("secure_port", 0)

    def _choose_ports(self) -> None:
        self.port = free_port()
        if self.secure:
            self.secure_port = free_port({self.port})

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
                *([f"secureClientPort={self.secure_port}", f"secureClientPortAddress={HOST}",
                   "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"]
                  if self.secure else []),
                *(f"{k}={v}" for k, v in self.extra_config.items()),
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
            *self.jvm_options,
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

    def __init__(self, workdir: Path | str, *, extra_listeners: dict[str, str] | None = None,
                 extra_config: dict[str, str] | None = None, **kwargs: Any) -> None:
        """``extra_listeners`` maps listener names to security protocols (``{"SASL_SSL":
        "SASL_SSL"}``): each gets a port of its own (``listener_port(name)``), beside the
        PLAINTEXT one the probe and the inter-broker traffic use. Their settings
        (``listener.name.<name>.*``) go in ``extra_config``."""
        super().__init__(workdir, **kwargs)
        self.controller_port = 0
        self.cluster_id = ""
        self.extra_listeners = dict(extra_listeners or {})
        self.extra_ports: dict[str, int] = {}
        self.extra_config: dict[str, str] = dict(extra_config or {})

    @property
    def bootstrap(self) -> str:
        return self.endpoint

    def listener_port(self, name: str) -> int:
        return self.extra_ports[name]

    def _ports(self) -> dict[str, int]:
        return {"port": self.port, "controller_port": self.controller_port,
                **{f"{name.lower()}_port": port for name, port in self.extra_ports.items()}}

    def _set_ports(self, ports: dict[str, int]) -> None:
        self.port = ports.get("port", 0)
        self.controller_port = ports.get("controller_port", 0)
        self.extra_ports = {name: ports[f"{name.lower()}_port"] for name in self.extra_listeners
                            if f"{name.lower()}_port" in ports}

    def _choose_ports(self) -> None:
        self.port = free_port()
        self.controller_port = free_port({self.port})
        taken = {self.port, self.controller_port}
        self.extra_ports = {}
        for name in self.extra_listeners:
            self.extra_ports[name] = free_port(taken)
            taken.add(self.extra_ports[name])

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
            "listeners": ",".join([f"PLAINTEXT://{HOST}:{self.port}", f"CONTROLLER://{HOST}:{self.controller_port}",
                                   *(f"{n}://{HOST}:{p}" for n, p in self.extra_ports.items())]),
            "advertised.listeners": ",".join([f"PLAINTEXT://{HOST}:{self.port}",
                                              *(f"{n}://{HOST}:{p}" for n, p in self.extra_ports.items())]),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT",
                                                        *(f"{n}:{p}" for n, p in self.extra_listeners.items())]),
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
            # As Kafka draws them: never one starting with "-", which `format -t` would
            # take for an option (see infra.kafka_uuid).
            self.cluster_id = random_uuid()
        cmd = [
            java(),
            # A short-lived tool: the C1 compiler alone starts faster.
            "-XX:TieredStopAtLevel=1",
            *self._jvm_common("128m", may_dump=False),
            log_opt,
            "kafka.tools.StorageTool", "format",
            "-t", self.cluster_id, "-c", str(props), "--ignore-formatted",
        ]
        with open(self.log_path, "ab") as log:
            log.write(b"\n===== infra: formatting KRaft storage =====\n")
            log.flush()
            res = subprocess.run(
                cmd, cwd=self.home, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, timeout=120,
                preexec_fn=die_with_parent_preexec if self.die_with_parent else None,
            )
        if res.returncode != 0:
            raise InfraError(
                f"kafka storage format failed (exit {res.returncode}); see {self.log_path}:\n"
                f"{log_tail(self.log_path)}"
            )

    def metadata(self, timeout: float = 2.0) -> dict[str, Any]:
        """Ask the broker for cluster metadata over the Kafka wire protocol.

        Returns ``{"brokers": [(node_id, host, port)], "cluster_id": str|None,
        "controller_id": int}``. Blocks up to ``timeout``; raises OSError on network
        failure and InfraError if the broker cannot answer Metadata v4.
        """
        with socket.create_connection((HOST, self.port), timeout=timeout) as s:
            s.settimeout(timeout)
            return kafka_metadata(s)

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
