"""`kill -9` loses nothing acknowledged (DESIGN invariant 4), seen only through the API.

The registry's pid is granian's supervisor; its worker must die with it. A restart on
the same data dir must answer every read exactly as before, and hand out new ids above
every old one.
"""
from __future__ import annotations

import threading
from typing import Any

import requests

from tests.api.support import (
    RegistryProcess,
    ok_json,
    path_of,
    pid_alive,
    record,
    register,
    unique_record,
    wait_until,
)


def snapshot(server: RegistryProcess) -> dict[str, Any]:
    """Everything the API shows: subjects, versions (soft-deleted too), ids, config, mode."""
    subjects = ok_json(server.get("/subjects", params={"deleted": "true"}), "subjects")
    state: dict[str, Any] = {
        "subjects": subjects,
        "live_subjects": ok_json(server.get("/subjects"), "live subjects"),
        "schemas": ok_json(server.get("/schemas", params={"deleted": "true"}), "schemas"),
        "config": ok_json(server.get("/config"), "config"),
        "mode": ok_json(server.get("/mode"), "mode"),
        "versions": {}, "subject_config": {}, "subject_mode": {}, "ids": {},
    }
    for name in subjects:
        encoded = path_of(name)
        numbers = ok_json(server.get(f"/subjects/{encoded}/versions", params={"deleted": "true"}), "versions")
        state["versions"][name] = [
            ok_json(server.get(f"/subjects/{encoded}/versions/{n}", params={"deleted": "true"}), "version")
            for n in numbers]
        state["subject_config"][name] = server.get(f"/config/{encoded}").json()
        state["subject_mode"][name] = server.get(f"/mode/{encoded}").json()
    for item in state["schemas"]:
        state["ids"][item["id"]] = ok_json(server.get(f"/schemas/ids/{item['id']}"), "by id")
    return state


def kill9_and_check_the_worker_dies(server: RegistryProcess) -> None:
    workers = server.worker_pids()
    assert workers, "granian runs the registry in a worker process under the supervisor"
    server.kill9()
    assert not pid_alive(server.pid), "the supervisor is dead after kill -9"
    wait_until(lambda: not any(pid_alive(pid) for pid in workers), 10,
               f"the worker(s) {workers} to die with their killed supervisor")


def test_kill9_then_restart_answers_every_read_as_before(start_registry, subject):
    server = start_registry()
    ok_json(server.put("/config", {"compatibility": "NONE"}), "NONE while seeding unrelated schemas")
    ids = []
    for i in range(12):
        name = f"{subject}-{i % 4}"
        ids.append(register(server, name, unique_record(f"{name}-{i}", (f"f{i}", ["null", "int"]),
                                                        defaults={f"f{i}": None})))
    shared = record("Shared", ("id", "long"))
    ids.append(register(server, f"{subject}-0", shared))
    assert register(server, f"{subject}-3", shared) == ids[-1], "shared content, one id"
    ok_json(server.put(f"/config/{path_of(subject)}-1", {"compatibility": "FULL_TRANSITIVE"}), "subject config")
    ok_json(server.put(f"/mode/{path_of(subject)}-2", {"mode": "READONLY"}), "subject mode")
    ok_json(server.put("/config", {"compatibility": "FORWARD"}), "global config")
    ok_json(server.delete(f"/subjects/{path_of(subject)}-1/versions/1"), "soft-delete a version")
    ok_json(server.delete(f"/subjects/{path_of(subject)}-3"), "soft-delete a subject")
    ok_json(server.delete(f"/subjects/{path_of(subject)}-3", params={"permanent": "true"}), "hard-delete it")
    before = snapshot(server)
    assert len(before["schemas"]) >= 9, "the snapshot covers the registrations"

    kill9_and_check_the_worker_dies(server)
    server.start()  # same data dir, same port
    after = snapshot(server)
    assert after == before, "after kill -9 and a restart every read answers exactly as before"
    new_id = register(server, f"{subject}-new", unique_record(f"{subject}-new"))
    assert new_id > max(ids), f"a new schema gets an id above every old one ({new_id} <= {max(ids)})"


def test_kill9_during_concurrent_registrations_keeps_every_acknowledged_one(start_registry, subject):
    server = start_registry()
    threads_count, stop = 4, threading.Event()
    acknowledged: dict[str, tuple[str, int]] = {}  # subject -> (schema, id), only for 200 answers
    lock = threading.Lock()

    def writer(number: int) -> None:
        session = requests.Session()
        i = 0
        while not stop.is_set():
            name = f"{subject}-t{number}-{i}"
            schema = unique_record(name)
            try:
                response = session.post(f"{server.url}/subjects/{path_of(name)}/versions",
                                        json={"schema": schema}, timeout=10)
            except requests.RequestException:
                return  # the server is gone
            if response.status_code == 200:
                with lock:
                    acknowledged[name] = (schema, response.json()["id"])
            i += 1

    workers = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(threads_count)]
    for thread in workers:
        thread.start()
    try:
        wait_until(lambda: len(acknowledged) >= 40, 30, "40 acknowledged registrations")
        kill9_and_check_the_worker_dies(server)  # while the writers are still writing
    finally:
        stop.set()
        for thread in workers:
            thread.join(timeout=15)
    assert not any(thread.is_alive() for thread in workers), "every writer thread ended"
    with lock:
        survivors = dict(acknowledged)

    server.start()
    for name, (schema, schema_id) in survivors.items():
        got = server.get(f"/subjects/{path_of(name)}/versions/1")
        assert got.status_code == 200, f"acknowledged registration {name} (id {schema_id}) was lost: {got.text}"
        assert got.json()["id"] == schema_id, f"{name} kept its acknowledged id {schema_id}"
        assert ok_json(server.get(f"/schemas/ids/{schema_id}"), "by id")["schema"] == schema, \
            f"id {schema_id} still names {name}'s schema"
    ids = [schema_id for _, schema_id in survivors.values()]
    assert len(set(ids)) == len(ids), "distinct schemas never shared an id"
    everything = ok_json(server.get("/schemas", params={"deleted": "true"}), "schemas")
    highest = max(item["id"] for item in everything)
    fresh = register(server, f"{subject}-after", unique_record(f"{subject}-after"))
    assert fresh > highest, f"after the crash new ids continue above every id in the log ({fresh} <= {highest})"
