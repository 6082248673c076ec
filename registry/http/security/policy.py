"""Which operation each route performs, and on what: the declarative map authorization reads.

One entry per (Flask endpoint, method). A route with no entry is denied to everyone
(fail closed), and tests/unit/registry/http/test_every_answer_path.py checks that every route the app
serves has one, so a new route cannot ship unguarded. HEAD is GET's; OPTIONS needs
only an authenticated caller. To guard a new route, add its line here.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from registry.http.security.operations import Operation


class Target(enum.Enum):
    """What the operation applies to."""

    SUBJECT = "subject"  # the route's `subject`; the registry as a whole where the route has none
    SCHEMA_ID = "schema id"  # the route's schema id: allowed through any subject that uses it
    GLOBAL = "global"  # the registry as a whole
    LISTING = "listing"  # any authenticated caller; the view lists only what the caller may read
    AUTHENTICATED = "authenticated"  # any authenticated caller: nothing of any subject is shown


@dataclass(frozen=True)
class Policy:
    operation: Operation
    target: Target
    # A write whose JSON body sets one of these to a value other than null, 0 or -1 is also
    # an `import` (registering with an explicit id is what IMPORT mode is for).
    import_fields: tuple[str, ...] = ()
    # The JSON body may carry a schema's `references`: each subject they name must be
    # readable by the caller (`Guard.admit_body`), before anything is looked up.
    references: bool = False


SUBJECT_ARGUMENT = "subject"
SCHEMA_ID_ARGUMENT = "schema_id_text"

_READ_SUBJECT = Policy(Operation.READ, Target.SUBJECT)
_READ_SUBJECT_WITH_REFERENCES = Policy(Operation.READ, Target.SUBJECT, references=True)
_READ_ID = Policy(Operation.READ, Target.SCHEMA_ID)
_READ_GLOBAL = Policy(Operation.READ, Target.GLOBAL)
_LISTING = Policy(Operation.READ, Target.LISTING)
_AUTHENTICATED = Policy(Operation.READ, Target.AUTHENTICATED)

ROUTE_POLICIES: Mapping[tuple[str, str], Policy] = {
    # subjects and compatibility
    ("subjects.list_subjects", "GET"): _LISTING,
    ("subjects.lookup_schema", "POST"): _READ_SUBJECT_WITH_REFERENCES,
    ("subjects.delete_subject", "DELETE"): Policy(Operation.DELETE, Target.SUBJECT),
    ("subjects.list_versions", "GET"): _READ_SUBJECT,
    ("subjects.register", "POST"): Policy(Operation.WRITE, Target.SUBJECT, import_fields=("id",), references=True),
    ("subjects.get_version", "GET"): _READ_SUBJECT,
    ("subjects.get_version_schema", "GET"): _READ_SUBJECT,
    ("subjects.referenced_by", "GET"): _READ_SUBJECT,
    ("subjects.delete_version", "DELETE"): Policy(Operation.DELETE, Target.SUBJECT),
    ("subjects.check_version", "POST"): _READ_SUBJECT_WITH_REFERENCES,
    ("subjects.check_all_versions", "POST"): _READ_SUBJECT_WITH_REFERENCES,
    ("subjects.latest_with_metadata", "GET"): _READ_SUBJECT,
    ("subjects.modify_tags", "POST"): Policy(Operation.WRITE, Target.SUBJECT),
    # schemas
    ("schemas.list_schemas", "GET"): _LISTING,
    ("schemas.schema_types", "GET"): _AUTHENTICATED,
    ("schemas.get_schema", "GET"): _READ_ID,
    ("schemas.get_schema_text", "GET"): _READ_ID,
    ("schemas.get_schema_subjects", "GET"): _READ_ID,
    ("schemas.get_schema_versions", "GET"): _READ_ID,
    # A guid is not an id the rules can follow to subjects: registry-wide readers only.
    ("schemas.get_schema_by_guid", "GET"): _READ_GLOBAL,
    ("schemas.get_ids_of_guid", "GET"): _READ_GLOBAL,
    # contexts: their names come from every subject; deleting one is registry-wide
    ("contexts.list_contexts", "GET"): _READ_GLOBAL,
    ("contexts.delete_context", "DELETE"): Policy(Operation.DELETE, Target.GLOBAL),
    # associations: by subject like the subject; by resource a listing of those whose
    # subjects the caller may read (Confluent's serializers ask for their topic's on every
    # new schema); changes (whose subjects are in the body) registry-wide
    ("associations.by_subject", "GET"): _READ_SUBJECT,
    ("associations.by_resource_id", "GET"): _LISTING,
    ("associations.by_resource_name", "GET"): _LISTING,
    ("associations.create", "POST"): Policy(Operation.WRITE, Target.GLOBAL),
    ("associations.delete", "DELETE"): Policy(Operation.DELETE, Target.GLOBAL),
    ("associations.not_served", "POST"): Policy(Operation.WRITE, Target.GLOBAL),
    ("associations.not_served", "PUT"): Policy(Operation.WRITE, Target.GLOBAL),
    # config and mode: per subject, or global without one
    ("config.get_config", "GET"): _READ_SUBJECT,
    ("config.put_config", "PUT"): Policy(Operation.CONFIG, Target.SUBJECT),
    # ours: many IMPORT registrations of any subjects at once (schema-registry import)
    ("imports.import_schemas", "POST"): Policy(Operation.IMPORT, Target.GLOBAL),
    # ours: many config and mode writes of any subjects at once (schema-registry import)
    ("imports.import_settings", "POST"): Policy(Operation.IMPORT, Target.GLOBAL),
    ("config.delete_config", "DELETE"): Policy(Operation.CONFIG, Target.SUBJECT),
    ("config.get_mode", "GET"): _READ_SUBJECT,
    ("config.put_mode", "PUT"): Policy(Operation.MODE, Target.SUBJECT),
    ("config.delete_mode", "DELETE"): Policy(Operation.MODE, Target.SUBJECT),
    # the node
    ("cluster.root", "GET"): _AUTHENTICATED,
    ("cluster.root", "POST"): _AUTHENTICATED,
    ("cluster.metadata_id", "GET"): _AUTHENTICATED,
    ("cluster.metadata_version", "GET"): _AUTHENTICATED,
    ("cluster.metadata_deployment", "GET"): _AUTHENTICATED,
    ("cluster.leader", "GET"): _READ_GLOBAL,
    ("cluster.health", "GET"): _AUTHENTICATED,
    ("cluster.ready", "GET"): _AUTHENTICATED,
    ("observability.metrics_text", "GET"): _READ_GLOBAL,
    ("observability.openapi", "GET"): _AUTHENTICATED,
    # The web UI's static files: the browser asks for credentials once, for them, and
    # sends the same with the API calls the page makes (each authorized as any call).
    ("ui.ui_index", "GET"): _AUTHENTICATED,
    ("ui.ui_file", "GET"): _AUTHENTICATED,
}


def policy_for(endpoint: str, method: str) -> Policy | None:
    """The policy of a route, or None when it has none (and so is denied)."""
    if method == "OPTIONS":
        return _AUTHENTICATED
    return ROUTE_POLICIES.get((endpoint, "GET" if method == "HEAD" else method))
