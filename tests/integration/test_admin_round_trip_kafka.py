"""Export, import and copy keep a registry whole on the Kafka store (issue 48, item 9).

The round trip of tests/api/test_admin_round_trip.py, with every registry on the real
Kafka the test infra starts (each on its own `_schemas` topic): a source holding every
kind of state is exported; an import into another registry, killed with SIGKILL halfway
and run again, and a `copy` into a third, must each export the same again, ids and
versions included, and end in the source's global mode.
"""
from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.api.support import RegistryFactory, RegistryProcess
from tests.api.test_admin_round_trip import (  # faulty_targets: the fixture, shared
    assert_same_export, cli_ok, export, faulty_targets, global_mode, journals, ok_json,  # noqa: F401
    populate_every_kind_of_state, start_cli,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def on_kafka(tmp_path: Path, kafka_bootstrap: str) -> Iterator[Callable[[], RegistryProcess]]:
    """Start registries on the session's Kafka, each on a topic of its own; all killed at the end."""
    factory = RegistryFactory(tmp_path)

    def start() -> RegistryProcess:
        return factory(env={
            "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC": f"_schemas_{uuid.uuid4().hex[:10]}",
            "SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR": "1",
            "SCHEMA_REGISTRY_LEADER_ELECTION_SESSION_TIMEOUT_MS": "6000",
        })

    try:
        yield start
    finally:
        factory.close()


def test_round_trip_on_kafka_killed_import_and_copy(on_kafka, faulty_targets, tmp_path):
    source = on_kafka()
    populate_every_kind_of_state(source)
    before = export(tmp_path, source.url, tmp_path / "source")

    target = on_kafka()
    done = cli_ok(tmp_path, "import", str(tmp_path / "source"), "--url", target.url)
    assert (done["imported"], done["failed"]) == (len(before["schemas"]), []), done
    assert_same_export(before, export(tmp_path, target.url, tmp_path / "imported"), "Kafka: import -> export")
    assert global_mode(target) == "READONLY", "the target ends in the source's global mode"

    killed_target = on_kafka()
    running: list[subprocess.Popen[str]] = []
    proxy = faulty_targets(killed_target, fail_from=2,
                           fault=lambda: (running[0].kill(), running[0].wait(timeout=10)))
    running.append(start_cli(tmp_path, "import", str(tmp_path / "source"), "--url", proxy.url))
    running[0].wait(timeout=60)
    assert running[0].returncode == -signal.SIGKILL, "the CLI was killed in the second wave"
    held = len(ok_json(killed_target.get("/schemas?deleted=true"), "GET /schemas"))
    assert 0 < held < len(before["schemas"]) and global_mode(killed_target) == "IMPORT", "killed halfway"
    proxy.fail_from = None
    rerun = cli_ok(tmp_path, "import", str(tmp_path / "source"), "--url", proxy.url)
    assert (rerun["skipped"], rerun["failed"]) == (held, []), f"the re-run finishes the job: {rerun}"
    assert_same_export(before, export(tmp_path, killed_target.url, tmp_path / "rerun"),
                       "Kafka: killed import, re-run -> export")
    assert global_mode(killed_target) == "READONLY" and not journals(tmp_path), "the mode is the source's"

    copied_to = on_kafka()
    copied = cli_ok(tmp_path, "copy", "--from", source.url, "--to", copied_to.url)
    assert (copied["imported"], copied["failed"]) == (len(before["schemas"]), []), copied
    assert_same_export(before, export(tmp_path, copied_to.url, tmp_path / "copied"), "Kafka: copy -> export")
