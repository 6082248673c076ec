"""Associations (Confluent 8): which subject holds the schemas of a resource's keys or values.

    associations = Associations(service, cache, writer)
    associations.create(AssociationRequest("orders", "lkc-1", "topic-id-1", [AssociationSpec(...)]))
    associations.by_resource("lkc-1", "orders", association_types=["value"])

confluent-kafka's ASSOCIATED subject name strategy looks a topic up here
(`GET /associations/resources/{namespace}/{name}`) before falling back to the topic
name. The rules are those of Confluent's AbstractSchemaRegistry.createOrUpdateAssociation
for a create: a STRONG association is owned by its topic, is frozen, must name the
default subject `:.<namespace>:<name>-<type>` and comes with its schema; a WEAK one names
an existing subject that no STRONG association claims. Records are ASSOC keys in
Confluent's format; the guid and creation time are chosen by the leader when it plans
the write and carried in the record, so every node replays the same value.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from registry import errors
from registry.modes import Mode
from registry.service import RegisterRequest, RegistryService
from registry.subjects import check_subject, normalize_subject
from store.cache import Cache
from store.records import AssociationKey, AssociationValue, Key, SchemaValue, Value
from store.writer import LogWriter

TOPIC = "topic"
ASSOCIATION_TYPES = frozenset({"key", "value"})
LIFECYCLES = frozenset({"STRONG", "WEAK"})
WILDCARD = "-"
_MAX_NAME = 255


@dataclass(frozen=True)
class AssociationSpec:
    """One entry of `associations` in a create request, as given (None: not given)."""

    association_type: str | None = None
    subject: str | None = None
    lifecycle: str | None = None
    frozen: bool | None = None
    schema: RegisterRequest | None = None


@dataclass(frozen=True)
class AssociationRequest:
    resource_name: str
    resource_namespace: str
    resource_id: str | None
    specs: tuple[AssociationSpec, ...]
    resource_type: str | None = None


@dataclass(frozen=True)
class Created:
    """What a create answers: the associations written (or found equivalent), and the
    version each registered schema got, by association type."""

    request: AssociationRequest
    associations: tuple[AssociationValue, ...]
    registered: dict[str, SchemaValue]


def invalid(name: str, detail: str) -> errors.InvalidAssociation:
    return errors.InvalidAssociation(
        f"The association specified an invalid value for property: '{name}', detail: {detail}")


class Associations:
    """Reads come from the cache; `create` and `delete` plan ASSOC records for the writer."""

    def __init__(self, service: RegistryService, cache: Cache, writer: LogWriter) -> None:
        self._service = service
        self._cache = cache
        self._writer = writer

    # ---- reads -------------------------------------------------------------------

    def by_subject(self, subject: str, resource_type: str | None = None,
                   association_types: Iterable[str] = (), lifecycle: str | None = None) -> list[AssociationValue]:
        subject = normalize_subject(subject)
        return self._matching(lambda a: a.subject == subject, resource_type, association_types, lifecycle)

    def by_resource(self, namespace: str, name: str, resource_type: str | None = None,
                    association_types: Iterable[str] = (), lifecycle: str | None = None) -> list[AssociationValue]:
        """`-` as the namespace or the name matches any (Confluent's RESOURCE_WILDCARD)."""
        return self._matching(lambda a: (namespace == WILDCARD or a.resource_namespace == namespace)
                              and (name == WILDCARD or a.resource_name == name),
                              resource_type, association_types, lifecycle)

    def by_resource_id(self, resource_id: str, resource_type: str | None = None,
                       association_types: Iterable[str] = (), lifecycle: str | None = None) -> list[AssociationValue]:
        return self._matching(lambda a: a.resource_id == resource_id, resource_type, association_types, lifecycle)

    def _matching(self, keep, resource_type: str | None, association_types: Iterable[str],
                  lifecycle: str | None) -> list[AssociationValue]:
        wanted = set(association_types)
        kind = resource_type or TOPIC
        return [a for a in self._cache.associations()
                if keep(a) and a.resource_type == kind and (not wanted or a.association_type in wanted)
                and (lifecycle is None or a.lifecycle == lifecycle)]

    # ---- writes ------------------------------------------------------------------

    def create(self, request: AssociationRequest, dry_run: bool = False) -> Created:
        """Validate and write the request's associations, registering their schemas first.

        An association equivalent to one that exists is left as it is (a retried create
        succeeds). Raises InvalidAssociation (42212), AssociationForResourceExists (40903), AssociationForSubjectExists (40904),
        StrongAssociationExists (40905),
        NoActiveSubjectVersion (40907), and what registering a schema raises.
        """
        specs = self._validated(request, dry_run)
        for spec in specs:
            self._check_subject_claims(request, spec)
        if dry_run:
            return Created(request, (), {})
        registered = {spec.association_type: self._service.register(spec.subject, spec.schema)
                      for spec in specs if spec.schema is not None}
        now_ms = int(time.time() * 1000)

        def plan() -> tuple[list[tuple[Key, Value | None]], tuple[AssociationValue, ...]]:
            records: list[tuple[Key, Value | None]] = []
            values = []
            for spec in specs:
                existing = self._existing(request, spec.association_type)
                if existing is not None:
                    if not _equivalent(existing, spec):
                        raise errors.AssociationForResourceExists(
                            f"An association of type '{spec.association_type}' already exists for "
                            f"resource '{request.resource_name}'")
                    values.append(existing)
                    continue
                self._check_subject_claims(request, spec)
                value = AssociationValue(str(uuid.uuid4()), request.resource_name,
                                         request.resource_namespace, request.resource_id or "", TOPIC,
                                         spec.association_type, spec.subject, spec.lifecycle, bool(spec.frozen),
                                         now_ms)
                records.append((_key(value), value))
                values.append(value)
            return records, tuple(values)

        return Created(request, self._writer.write(plan), registered)

    def delete(self, resource_id: str, resource_type: str | None = None,
               association_types: Iterable[str] = ()) -> None:
        """Forget the resource's associations (of the given types). Raises
        AssociationNotFound (40410) when there are none."""
        types = list(association_types)

        def plan() -> tuple[list[tuple[Key, Value | None]], None]:
            found = self.by_resource_id(resource_id, resource_type, types)
            if not found:
                raise errors.AssociationNotFound(f"Association for '{resource_id}' not found.")
            return [(_key(a), None) for a in found], None

        self._writer.write(plan)

    # ---- rules -------------------------------------------------------------------

    def _validated(self, request: AssociationRequest, dry_run: bool) -> list[AssociationSpec]:
        for name, value in (("resourceName", request.resource_name),
                            ("resourceNamespace", request.resource_namespace)):
            _check_name(name, value)
        if not dry_run and not request.resource_id:
            raise invalid("resourceId", "cannot be null or empty")
        if request.resource_id is not None:
            _check_name("resourceId", request.resource_id)
        if request.resource_type not in (None, "", TOPIC):
            raise invalid("resourceType", f"must be '{TOPIC}'")
        if not request.specs:
            raise invalid("associations", "cannot be null or empty")
        specs, seen = [], set()
        for spec in request.specs:
            spec = self._with_defaults(request, spec)
            if spec.association_type in seen:
                raise invalid("associationType", f"may only appear once per request, but "
                                                 f"'{spec.association_type}' appears more than once")
            seen.add(spec.association_type)
            specs.append(spec)
        if len({s.lifecycle for s in specs}) > 1:
            raise invalid("lifecycle", "all associations of a request must have the same lifecycle")
        return specs

    def _with_defaults(self, request: AssociationRequest, spec: AssociationSpec) -> AssociationSpec:
        """Confluent's AssociationCreateOrUpdateInfo.validate and applyDefaults for a create."""
        kind = spec.association_type or "value"
        if kind not in ASSOCIATION_TYPES:
            raise invalid("associationType", "must be either 'key' or 'value'")
        if spec.lifecycle is not None and spec.lifecycle not in LIFECYCLES:
            raise invalid("lifecycle", "must be STRONG or WEAK")
        lifecycle = spec.lifecycle
        if spec.schema is not None:
            if lifecycle == "WEAK":
                raise invalid("lifecycle", "cannot be WEAK when schema is provided")
            if spec.frozen is False:
                raise invalid("frozen", "cannot be false when a schema is provided")
            lifecycle = "STRONG"
        elif lifecycle is None:
            lifecycle = "WEAK"
        frozen = lifecycle == "STRONG"
        if spec.frozen is not None and spec.frozen != frozen:
            raise invalid("frozen", f"association with lifecycle of {lifecycle} cannot be frozen={spec.frozen}")
        default_subject = f":.{request.resource_namespace}:{request.resource_name}-{kind}"
        subject = normalize_subject(spec.subject) if spec.subject is not None else None
        if subject is None:
            if lifecycle == "WEAK":
                raise invalid("subject", "must be provided for WEAK associations")
            subject = default_subject
        check_subject(subject)
        if frozen and subject != default_subject:
            raise invalid("subject", f"frozen associations must use subject '{default_subject}'")
        if lifecycle == "WEAK" and subject == default_subject:
            raise invalid("subject", f"WEAK associations cannot use subject '{default_subject}'")
        if frozen and spec.schema is None:
            raise invalid("schema", "schema must be provided when creating a frozen association")
        return AssociationSpec(kind, subject, lifecycle, frozen, spec.schema)

    def _check_subject_claims(self, request: AssociationRequest, spec: AssociationSpec) -> None:
        subject = spec.subject or ""
        if self._existing(request, spec.association_type or "") is not None:
            return  # the same association again: decided when planned
        if spec.schema is not None and self._service.mode_for(subject) is Mode.IMPORT:
            raise invalid("schema", f"cannot be provided while subject '{subject}' is in IMPORT mode")
        if spec.schema is None:
            try:
                self._service.version(subject, "latest")
            except (errors.SubjectNotFound, errors.VersionNotFound):
                raise errors.NoActiveSubjectVersion(
                    f"No active (non-deleted) version exists for subject '{subject}'") from None
        others = self.by_subject(subject, None)
        if spec.lifecycle == "STRONG" and others:
            raise errors.AssociationForSubjectExists(f"An association already exists for subject '{subject}'")
        if spec.lifecycle == "WEAK" and any(a.lifecycle == "STRONG" for a in others):
            raise errors.StrongAssociationExists(f"A strong association already exists for subject '{subject}'")

    def _existing(self, request: AssociationRequest, association_type: str) -> AssociationValue | None:
        if not request.resource_id:
            return None
        found = self.by_resource_id(request.resource_id, TOPIC, [association_type])
        return found[0] if found else None


def _equivalent(existing: AssociationValue, spec: AssociationSpec) -> bool:
    return (existing.subject, existing.lifecycle, existing.frozen) == (spec.subject, spec.lifecycle, spec.frozen)


def _key(value: AssociationValue) -> AssociationKey:
    return AssociationKey(value.resource_name, value.resource_namespace, value.resource_type,
                          value.association_type, value.subject, value.tenant)


def _check_name(name: str, value: object) -> None:
    """Resource names and ids: non-empty text without a control character or a colon
    (it becomes part of a context name), at most 255 characters."""
    if not isinstance(value, str) or not value:
        raise invalid(name, "cannot be null or empty")
    if len(value) > _MAX_NAME or ":" in value or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        raise invalid(name, "must be at most 255 characters, without ':' or control characters")
