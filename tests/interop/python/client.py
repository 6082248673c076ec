"""confluent-kafka's SchemaRegistryClient and Avro serdes, and ours (registry.client,
registry.serde), against a registry: the interop program for Python.

    python client.py --client confluent|ours --serde confluent|ours < plan.json

`--client` picks the SchemaRegistryClient the API steps and the serdes use; `--serde`
the serializer and deserializer. The plan and the report are as for the other
programs (tests/interop/clients.py). Data-contract rules and associations are
confluent-kafka's serdes' (CEL executors from confluent_kafka.schema_registry.rules.cel,
installed from tests/interop/python/requirements.txt).
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentSerializer
from confluent_kafka.schema_registry.common.schema_registry_client import (
    AssociationCreateOrUpdateInfo,
    AssociationCreateOrUpdateRequest,
    RuleSet,
)
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
from confluent_kafka.schema_registry.rules.cel.cel_field_executor import CelFieldExecutor
from confluent_kafka.serialization import MessageField, SerializationContext

from registry.client import SchemaRegistryClient as OurClient
from registry.serde import AvroDeserializer as OurDeserializer
from registry.serde import AvroSerializer as OurSerializer

Steps = dict[str, dict[str, Any]]


def chain(exc: BaseException | None) -> str:
    """`exc` and what caused it: confluent-kafka raises a bare SerializationError from the rule's."""
    parts = []
    while exc is not None and len(parts) < 8:
        parts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return " <- ".join(parts)


class Report:
    """Each step's outcome; a step that raises is recorded, and the next one runs."""

    def __init__(self) -> None:
        self.steps: Steps = {}

    def step(self, name: str, fn: Callable[[], Any]) -> None:
        try:
            self.steps[name] = {"ok": True, "value": fn()}
        except Exception as exc:  # a failed step is data for the test, whatever it raised
            outcome: dict[str, Any] = {"ok": False, "error": chain(exc), "type": type(exc).__name__}
            for attr, key in (("http_status_code", "status"), ("error_code", "error_code")):
                if isinstance(getattr(exc, attr, None), int):
                    outcome[key] = getattr(exc, attr)
            self.steps[name] = outcome

    def ok_value(self, name: str) -> Any:
        outcome = self.steps[name]
        if not outcome["ok"]:
            raise RuntimeError(f"step {name} failed first")
        return outcome["value"]


class Program:
    def __init__(self, plan: dict[str, Any], client_kind: str, serde_kind: str) -> None:
        self.plan = plan
        self.url: str = plan["url"]
        self.prefix: str = plan["prefix"]
        self.schemas: dict[str, str] = plan["schemas"]
        self.client_kind = client_kind
        self.serde_kind = serde_kind
        self.report = Report()
        self.rules = RuleRegistry()
        self.rules.register_executor(CelExecutor())
        self.rules.register_executor(CelFieldExecutor())

    def client(self) -> Any:
        """A client of its own per use, so no cache hides what the server answers."""
        if self.client_kind == "ours":
            return OurClient({"url": self.url, "max.retries": 0})
        return ConfluentClient({"url": self.url, "max.retries": 0})

    def serializer(self, schema: str | None, conf: dict[str, Any] | None = None) -> Callable[..., bytes]:
        if self.serde_kind == "ours":
            return OurSerializer(self.client(), schema, conf=conf)
        return ConfluentSerializer(self.client(), schema, conf=conf, rule_registry=self.rules)

    def deserializer(self) -> Callable[..., Any]:
        if self.serde_kind == "ours":
            return OurDeserializer(self.client())
        return ConfluentDeserializer(self.client(), rule_registry=self.rules)

    @staticmethod
    def ctx(topic: str) -> SerializationContext:
        return SerializationContext(topic, MessageField.VALUE)

    def decode(self, topic: str, data: bytes) -> Any:
        return self.deserializer()(data, self.ctx(topic))

    # ---- the API ------------------------------------------------------------------------

    def api(self) -> None:
        step, client, schemas = self.report.step, self.client(), self.schemas
        subject = f"{self.prefix}-api"
        v1 = Schema(schemas["v1"], "AVRO")

        def registered(r: Any) -> dict[str, Any]:
            return {"id": r.schema_id, "version": r.version, "subject": r.subject,
                    "schema": r.schema.schema_str if r.schema is not None else None}

        step("register", lambda: registered(client.register_schema_full_response(subject, v1)))
        step("get_by_id", lambda: self.client().get_schema(self.report.ok_value("register")["id"]).schema_str)
        step("get_version", lambda: registered(self.client().get_version(subject, 1)))
        step("get_latest", lambda: registered(self.client().get_latest_version(subject)))
        step("lookup", lambda: registered(self.client().lookup_schema(subject, v1)))
        step("compat_ok", lambda: self.client().test_compatibility(subject, Schema(schemas["v2"], "AVRO")))
        step("compat_bad", lambda: self.client().test_compatibility(subject, Schema(schemas["incompatible"], "AVRO")))
        step("register_v2", lambda: registered(
            client.register_schema_full_response(subject, Schema(schemas["v2"], "AVRO"))))
        step("versions", lambda: client.get_versions(subject))
        # Both clients answer the response body, {"compatibility": level}, whatever their hints say.
        step("config_set", lambda: client.set_compatibility(subject, "FULL")["compatibility"])
        step("config_get", lambda: self.client().get_compatibility(subject))
        step("soft_delete", lambda: {"deleted": client.delete_version(subject, 2),
                                     "versions": self.client().get_versions(subject)})
        step("hard_delete", lambda: {
            "deleted_version": client.delete_version(subject, 2, permanent=True),
            "deleted_subject": client.delete_subject(subject),
            "purged_subject": client.delete_subject(subject, permanent=True),
            "listed": subject in self.client().get_subjects(),
        })

    # ---- the serdes -----------------------------------------------------------------------

    def write_v1(self, topic: str) -> bytes:
        return self.serializer(self.schemas["v1"])(self.plan["value"], self.ctx(topic))

    def serdes(self) -> None:
        step, prefix = self.report.step, self.prefix
        topic = f"{prefix}-rt"

        def roundtrip() -> dict[str, Any]:
            data = self.write_v1(topic)
            return {"hex": data.hex(), "decoded": self.decode(topic, data)}

        step("roundtrip", roundtrip)

        def written() -> bytes:
            return bytes.fromhex(self.report.ok_value("roundtrip")["hex"])

        # A consumer on a mirror of the topic: `<mirror>-value` does not exist.
        step("mirror_topic", lambda: self.decode(f"{prefix}-mirror", written()))

        # ... and on a topic whose `-value` subject holds another schema, not the writer's.
        def other_subject() -> Any:
            self.client().register_schema(f"{prefix}-other-value", Schema(self.schemas["other"], "AVRO"))
            return self.decode(f"{prefix}-other", written())

        step("mirror_other_subject", other_subject)

        # The writer's subject hard-deleted; the id lives on under another subject.
        def deleted_subject() -> Any:
            gone, client = f"{prefix}-gone", self.client()
            data = self.write_v1(gone)
            client.register_schema(f"{prefix}-keep", Schema(self.schemas["v1"], "AVRO"))
            client.delete_subject(f"{gone}-value")
            client.delete_subject(f"{gone}-value", permanent=True)
            return self.decode(gone, data)

        step("deleted_subject", deleted_subject)

    def rule(self) -> None:
        topic = f"{self.prefix}-rule"

        def run() -> dict[str, Any]:
            schema = Schema(self.schemas["rule"], "AVRO", rule_set=RuleSet.from_dict(self.plan["rule_set"]))
            registered = self.client().register_schema_full_response(f"{topic}-value", schema)
            stored = self.client().get_latest_version(f"{topic}-value").schema
            serialize = self.serializer(None, {"auto.register.schemas": False, "use.latest.version": True})
            good = serialize(self.plan["rule_good"], self.ctx(topic))
            bad_error = None
            try:
                serialize(self.plan["rule_bad"], self.ctx(topic))
            except Exception as exc:  # what the rule raises is the observation
                bad_error = chain(exc)
            return {
                "id": registered.schema_id,
                "stored_rule_set": stored.rule_set.to_dict() if stored.rule_set is not None else None,
                "good_decoded": self.decode(topic, good),
                "good_id": int.from_bytes(good[1:5], "big"),
                "bad_error": bad_error,
            }

        self.report.step("rule", run)

    def associated(self) -> None:
        topic, target = f"{self.prefix}-assoc", f"{self.prefix}-assoc-target"

        def run() -> dict[str, Any]:
            client = self.client()
            client.register_schema(target, Schema(self.schemas["v1"], "AVRO"))
            client.create_association(AssociationCreateOrUpdateRequest(
                resource_name=topic, resource_namespace="lkc-interop", resource_id=f"{topic}-id",
                resource_type="topic",
                associations=[AssociationCreateOrUpdateInfo(subject=target, association_type="value")]))
            found = self.client().get_associations_by_resource_name(topic, "-", "topic", ["value"])
            # confluent-kafka's default strategy is ASSOCIATED; named here so it is the one tested.
            data = self.serializer(self.schemas["v1"], {"subject.name.strategy.type": "ASSOCIATED"})(
                self.plan["value"], self.ctx(topic))
            return {
                "found": [a.subject for a in found],
                "target_versions": self.client().get_versions(target),
                "topic_subject_created": f"{topic}-value" in self.client().get_subjects(),
                "decoded": self.decode(topic, data),
            }

        self.report.step("associated", run)

    def read(self) -> None:
        deserialize = self.deserializer()
        for item in self.plan["read"]:
            self.report.step(item["writer"], lambda item=item: deserialize(bytes.fromhex(item["hex"]),
                                                                           self.ctx(item["topic"])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("confluent", "ours"), required=True)
    parser.add_argument("--serde", choices=("confluent", "ours"), required=True)
    args = parser.parse_args()
    try:
        program = Program(json.load(sys.stdin), args.client, args.serde)
        if program.plan["mode"] == "read":
            program.read()
        else:
            if args.serde == args.client:  # the API steps once per client kind
                program.api()
            program.serdes()
            if args.serde == "confluent":
                program.rule()
                program.associated()
    except Exception:  # the program itself is broken, not a step: say so and fail
        traceback.print_exc()
        return 2
    json.dump({"steps": program.report.steps}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
