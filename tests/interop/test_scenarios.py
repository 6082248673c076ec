"""Each real client, through its own API and serdes, against our registry: one test per
(client, step), so the report reads as a matrix.

The steps (tests/interop/clients.py) register, read back by id, version and latest,
look up, check compatibility both ways, set and read config, soft- and hard-delete;
round-trip a record through the client's own serializer and deserializer; decode on
topics whose `-value` subject does not hold the writer's id (a mirrored topic, a topic
with other schemas, a hard-deleted subject: Confluent's deserializers ask
`/schemas/ids/{id}?subject=<topic>-value`, and Confluent answers with the schema
whatever the subject holds); produce through a CEL data-contract rule set; and resolve
a subject through an association (the ASSOCIATED strategy).
"""
from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

import pytest

from tests.api.support import RegistryProcess, ok_json, path_of
from tests.interop.clients import (
    CLIENTS, OTHER, RULE_GOOD_WRITTEN, RULE_SET, V1, V2, VALUE, Client,
)

pytestmark = pytest.mark.integration

Check = Callable[[Any, "Context"], None]


class Context:
    """What a check may look at besides the step's value: the registry and the other steps."""

    def __init__(self, client: Client, prefix: str, steps: dict[str, dict[str, Any]],
                 registry: RegistryProcess) -> None:
        self.client = client
        self.prefix = prefix
        self.steps = steps
        self.registry = registry

    def value_of(self, step: str) -> Any:
        outcome = self.steps.get(step)
        assert outcome and outcome.get("ok"), f"{self.client.name}: step {step!r} failed first: {outcome!r}"
        return outcome["value"]

    def first_id(self) -> int:
        return self.value_of("register")["id"]

    def writer_id(self, hex_payload: str) -> int:
        data = bytes.fromhex(hex_payload)
        assert data[:1] == b"\x00", f"Confluent's wire format starts with magic byte 0: {data[:5]!r}"
        return struct.unpack(">I", data[1:5])[0]


def same_schema(text: Any, expected: dict[str, Any], what: str) -> None:
    assert isinstance(text, str), f"{what}: a schema is text, got {text!r}"
    assert json.loads(text) == expected, f"{what}: the registered schema comes back: {text}"


def check_register(value: Any, ctx: Context) -> None:
    assert isinstance(value.get("id"), int) and value["id"] > 0, f"register answers a positive id: {value!r}"
    if ctx.client.full_answers:  # kafkajs's register() answers {id} and nothing else
        # Confluent's RegisterSchemaResponse carries the version; Go's
        # RegisterFullResponse().Version and the others read it from there.
        assert value.get("version") == 1, f"the full register response says version 1: {value!r}"


def check_get_by_id(value: Any, ctx: Context) -> None:
    same_schema(value, V1, "schema by id")


def check_get_version(value: Any, ctx: Context) -> None:
    assert value["id"] == ctx.first_id(), f"version 1 has the registered id: {value!r}"
    if ctx.client.full_answers:  # kafkajs's getRegistryId answers the id only
        assert value["version"] == 1, f"version 1 is version 1: {value!r}"
        same_schema(value["schema"], V1, "schema of version 1")


def check_get_latest(value: Any, ctx: Context) -> None:
    check_get_version(value, ctx)


def check_lookup(value: Any, ctx: Context) -> None:
    assert value["id"] == ctx.first_id(), f"lookup finds the registered id: {value!r}"
    if ctx.client.full_answers:
        assert value["version"] == 1, f"lookup finds version 1: {value!r}"


def check_compat_ok(value: Any, ctx: Context) -> None:
    assert value is True, f"adding a field with a default is BACKWARD compatible: {value!r}"


def check_compat_bad(value: Any, ctx: Context) -> None:
    assert value is False, f"adding a field without a default is not BACKWARD compatible: {value!r}"


def check_register_v2(value: Any, ctx: Context) -> None:
    assert isinstance(value.get("id"), int) and value["id"] != ctx.first_id(), \
        f"a new schema gets a new id: {value!r}"
    if ctx.client.full_answers:
        assert value.get("version") == 2, f"the second schema is version 2: {value!r}"
    else:
        ok_versions = ok_json(ctx.registry.get(f"/subjects/{path_of(ctx.prefix + '-api')}/versions"), "versions")
        assert ok_versions == [1, 2], f"the client registered a second version: {ok_versions!r}"
    answer = ok_json(ctx.registry.get(f"/schemas/ids/{value['id']}"), "schema by id")
    assert json.loads(answer["schema"]) == V2, f"the new id holds V2: {answer!r}"


def check_versions(value: Any, ctx: Context) -> None:
    assert value == [1, 2], f"two versions listed: {value!r}"


def check_config_set(value: Any, ctx: Context) -> None:
    assert value == "FULL", f"the config update answers the level set: {value!r}"


def check_config_get(value: Any, ctx: Context) -> None:
    assert value == "FULL", f"the subject's level reads back: {value!r}"


def check_soft_delete(value: Any, ctx: Context) -> None:
    assert value == {"deleted": 2, "versions": [1]}, f"version 2 soft-deleted, version 1 left: {value!r}"


def check_hard_delete(value: Any, ctx: Context) -> None:
    assert value == {"deleted_version": 2, "deleted_subject": [1], "purged_subject": [1], "listed": False}, \
        f"version 2 purged, then the subject soft- and hard-deleted and gone from the list: {value!r}"
    answer = ctx.registry.get(f"/subjects/{path_of(ctx.prefix + '-api')}/versions?deleted=true")
    assert answer.status_code == 404, f"a hard-deleted subject is gone even with deleted=true: {answer.text}"


def check_roundtrip(value: Any, ctx: Context) -> None:
    assert value["decoded"] == VALUE, f"the client's deserializer reads what its serializer wrote: {value!r}"
    writer_id = ctx.writer_id(value["hex"])
    answer = ok_json(ctx.registry.get(f"/subjects/{path_of(ctx.prefix + '-rt-value')}/versions/latest"),
                     "the round trip's subject")
    assert answer["id"] == writer_id, f"the serializer registered the writer id under <topic>-value: {answer!r}"


def check_decodes_value(value: Any, ctx: Context) -> None:
    assert value == VALUE, f"the record decodes although <topic>-value does not hold its id: {value!r}"


def check_rule(value: Any, ctx: Context) -> None:
    stored = value["stored_rule_set"]
    assert stored and [r["name"] for r in stored.get("domainRules", [])] == \
        [r["name"] for r in RULE_SET["domainRules"]], f"the registry keeps the schema's ruleSet: {stored!r}"
    assert value["good_id"] == value["id"], f"the serializer uses the registered (latest) id: {value!r}"
    assert value["good_decoded"] == RULE_GOOD_WRITTEN, \
        f"the CEL_FIELD transform ran on write, the CONDITION let a valid record through: {value!r}"
    assert value["bad_error"], f"the CEL CONDITION refused a record that breaks it: {value!r}"
    condition = RULE_SET["domainRules"][0]
    assert condition["name"] in value["bad_error"] or condition["expr"] in value["bad_error"], \
        f"the refusal is the CONDITION rule's: {value['bad_error']!r}"


def check_associated(value: Any, ctx: Context) -> None:
    target = f"{ctx.prefix}-assoc-target"
    assert value["found"] == [target], f"the association is served back for the topic: {value!r}"
    assert value["target_versions"] == [1], f"the serializer registered under the associated subject: {value!r}"
    assert value["topic_subject_created"] is False, \
        f"with an association, the topic strategy's <topic>-value is not used: {value!r}"
    assert value["decoded"] == VALUE, f"the record round-trips: {value!r}"


CHECKS: dict[str, Check] = {
    "register": check_register, "get_by_id": check_get_by_id, "get_version": check_get_version,
    "get_latest": check_get_latest, "lookup": check_lookup, "compat_ok": check_compat_ok,
    "compat_bad": check_compat_bad, "register_v2": check_register_v2, "versions": check_versions,
    "config_set": check_config_set, "config_get": check_config_get, "soft_delete": check_soft_delete,
    "hard_delete": check_hard_delete, "roundtrip": check_roundtrip, "mirror_topic": check_decodes_value,
    "mirror_other_subject": check_decodes_value, "deleted_subject": check_decodes_value,
    "rule": check_rule, "associated": check_associated,
}
CASES = [pytest.param(name, step, id=f"{name}-{step}") for name, client in CLIENTS.items() for step in client.steps]


@pytest.mark.parametrize("name, step", CASES)
def test_client_step(name: str, step: str, scenario: Any, interop_registry: RegistryProcess) -> None:
    prefix, steps = scenario(name)
    outcome = steps.get(step)
    assert outcome is not None, f"{name} did not report step {step!r}; it reported {sorted(steps)}"
    assert outcome.get("ok"), f"{name}: step {step!r} raised: {outcome!r}"
    CHECKS[step](outcome["value"], Context(CLIENTS[name], prefix, steps, interop_registry))


def test_every_step_has_a_check() -> None:
    assert set(CHECKS) == {s for c in CLIENTS.values() for s in c.steps}, "each step a client takes is checked"
    assert OTHER != V1 and V2 != V1, "the mirror and evolution steps use schemas other than V1"
