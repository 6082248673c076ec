"""Authorization rules: who may do what to which subjects, and to the registry as a whole.

    {"rules": [
      {"principal": "alice", "operations": ["read", "write"], "subject_prefix": "team-a."},
      {"principal": "Group:ops", "operations": ["*"], "subject_regex": ".*", "global": true},
      {"principal": "*", "operations": ["read"], "subject": "shared-value"}
    ]}

Each rule names a principal (`alice` or `User:alice`; `Group:ops` for a role from the
users file or a token's groups claim; `*` for anyone authenticated, ANONYMOUS
included when authentication is off), operations (`read`, `write`, `delete`,
`config`, `mode`, `import`, or `*`), and what they apply to: subjects chosen by
exactly one of `subject` (exact name), `subject_prefix` or `subject_regex` (RE2,
matching the whole name), and/or `"global": true` for the registry-wide config and
mode and other global reads. Rules only grant; a request no rule grants is denied.

Karapace's ACL entries are read as they are, in the same file, under `permissions`:
`{"username": "u", "operation": "Read" | "Write", "resource": "<regex>"}`, the regex
matched from the start of `Subject:<name>` or `Config:` as Karapace matches it.
`Read` grants read; `Write` grants read, write, delete, config and mode (not import).
A Karapace file's `users` are not read: users live in `authentication.users.file`.

Regexes are RE2 (linear time in the subject's length), since subjects come from callers.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import orjson
import re2

from registry.http.security.operations import Operation
from registry.http.security.principal import Principal
from registry.settings import ConfigError

log = logging.getLogger(__name__)

_ALL = frozenset(Operation)
_KARAPACE = {"Read": frozenset({Operation.READ}),
             "Write": frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.CONFIG,
                                 Operation.MODE})}
_SELECTORS = ("subject", "subject_prefix", "subject_regex")
_DECISIONS = 100_000


@dataclass(frozen=True)
class Rule:
    operations: frozenset[Operation]
    subjects: Callable[[str], bool] | None  # None: no subject
    is_global: bool
    source: str  # for log lines and error messages


class Rules:
    """Parsed rules, indexed by principal so a decision reads only the caller's rules.
    Immutable; a reload builds a new one."""

    def __init__(self, by_principal: dict[str, list[Rule]], by_group: dict[str, list[Rule]],
                 anyone: list[Rule]) -> None:
        self._by_principal = by_principal
        self._by_group = by_group
        self._anyone = anyone
        # Decisions made, by (principal, operation, subject): one dict read instead of
        # walking rules and regexes on every request. Lives as long as these rules do (a
        # reload makes new Rules); emptied when it grows past its bound.
        self._decisions: dict[tuple[Principal, Operation, str | None], bool] = {}

    def _rules_of(self, principal: Principal) -> list[Rule]:
        found = self._by_principal.get(principal.name, [])
        if principal.roles:
            found = found + [r for role in principal.roles for r in self._by_group.get(role, [])]
        return found + self._anyone if self._anyone else found

    def allows(self, principal: Principal, operation: Operation, subject: str | None) -> bool:
        """Whether some rule grants `operation` on `subject` (None: the registry as a whole)."""
        key = (principal, operation, subject)
        decided = self._decisions.get(key)
        if decided is None:
            decided = self._decide(principal, operation, subject)
            if len(self._decisions) >= _DECISIONS:
                self._decisions.clear()
            self._decisions[key] = decided
        return decided

    def _decide(self, principal: Principal, operation: Operation, subject: str | None) -> bool:
        for rule in self._rules_of(principal):
            if operation not in rule.operations:
                continue
            if subject is None:
                if rule.is_global:
                    return True
            elif rule.subjects is not None and rule.subjects(subject):
                return True
        return False

    def allows_any(self, principal: Principal, operation: Operation, subjects: list[str]) -> bool:
        for subject in subjects:
            if self.allows(principal, operation, subject):
                return True
        return False


def parse_rules(data: bytes) -> Rules:
    """A rules file's content. Raises ConfigError naming the entry that cannot be used."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError("expected a JSON object with `rules` and/or Karapace's `permissions`")
    unknown = set(document) - {"rules", "permissions", "users"}
    if unknown:
        raise ConfigError(f"unknown top-level keys {sorted(unknown)}")
    if document.get("users"):
        log.warning("the rules file lists users; they are not read: users live in authentication.users.file")
    by_principal: dict[str, list[Rule]] = {}
    by_group: dict[str, list[Rule]] = {}
    anyone: list[Rule] = []
    entries = [(_rule, e) for e in _list(document, "rules")] + [(_karapace, e) for e in _list(document, "permissions")]
    for index, (reader, entry) in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"entry {index}: expected an object, got {entry!r}")
        principal, rule = reader(entry, f"entry {index}")
        if principal == "*":
            anyone.append(rule)
        elif principal.startswith("Group:"):
            by_group.setdefault(principal[len("Group:"):], []).append(rule)
        else:
            name = principal[len("User:"):] if principal.startswith("User:") else principal
            by_principal.setdefault(name, []).append(rule)
    return Rules(by_principal, by_group, anyone)


def _list(document: dict, key: str) -> list:
    value = document.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"`{key}` must be a list")
    return value


def _rule(entry: dict, where: str) -> tuple[str, Rule]:
    unknown = set(entry) - {"principal", "operations", "global", *_SELECTORS}
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    principal = entry.get("principal")
    if not isinstance(principal, str) or not principal:
        raise ConfigError(f"{where}: `principal` must be a non-empty string")
    operations = entry.get("operations")
    if not isinstance(operations, list) or not operations:
        raise ConfigError(f"{where}: `operations` must be a non-empty list")
    granted: set[Operation] = set()
    for name in operations:
        if name == "*":
            granted |= _ALL
            continue
        try:
            granted.add(Operation(name))
        except ValueError:
            raise ConfigError(f"{where}: unknown operation {name!r}; expected one of "
                              f"{', '.join(o.value for o in Operation)} or *") from None
    is_global = entry.get("global", False)
    if not isinstance(is_global, bool):
        raise ConfigError(f"{where}: `global` must be true or false")
    selectors = [k for k in _SELECTORS if k in entry]
    if len(selectors) > 1:
        raise ConfigError(f"{where}: give one of {', '.join(_SELECTORS)}, not several")
    if not selectors and not is_global:
        raise ConfigError(f"{where}: say what the rule applies to: one of {', '.join(_SELECTORS)}, "
                          "or \"global\": true")
    subjects = None
    if selectors:
        value = entry[selectors[0]]
        if not isinstance(value, str):
            raise ConfigError(f"{where}: `{selectors[0]}` must be a string")
        if selectors[0] == "subject":
            subjects = value.__eq__
        elif selectors[0] == "subject_prefix":
            subjects = _prefix(value)
        else:
            pattern = _compile(value, where)
            subjects = lambda s, p=pattern: p.fullmatch(s) is not None  # noqa: E731
    return principal, Rule(frozenset(granted), subjects, is_global, where)


def _karapace(entry: dict, where: str) -> tuple[str, Rule]:
    principal, operation, resource = entry.get("username"), entry.get("operation"), entry.get("resource")
    if not isinstance(principal, str) or not principal:
        raise ConfigError(f"{where}: `username` must be a non-empty string")
    if operation not in _KARAPACE:
        raise ConfigError(f"{where}: `operation` must be Read or Write, got {operation!r}")
    if not isinstance(resource, str):
        raise ConfigError(f"{where}: `resource` must be a regex string")
    pattern = _compile(resource, where)
    return principal, Rule(_KARAPACE[operation], lambda s, p=pattern: p.match("Subject:" + s) is not None,
                           pattern.match("Config:") is not None, where)


def _prefix(prefix: str) -> Callable[[str], bool]:
    return lambda subject: subject.startswith(prefix)


def _compile(pattern: str, where: str) -> re2._Regexp:
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise ConfigError(f"{where}: bad regex {pattern!r}: {exc}") from None
