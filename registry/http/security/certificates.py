"""A principal from a client certificate: its subject, mapped by Kafka's rules.

    mapper = CertificatePrincipals("RULE:^CN=([^,]*),.*$/$1/L,DEFAULT")
    mapper.name("CN=Alice,O=Acme")  # 'alice'

`ssl.principal.mapping.rules` has Kafka's syntax and meaning: rules are tried in
order; `RULE:pattern/replacement/` applies to a subject the pattern matches whole
(`$1` names a group; a trailing `L` or `U` changes the case), `DEFAULT` keeps the
subject as it is. A subject no rule matches is refused. The subject is written as
RFC 4514 (`CN=alice,OU=eng,O=Acme`), most specific first, as Java prints it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from registry.settings import ConfigError

_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?))\s*(?:,|\n|$)")


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str
    case: str

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        match = self.pattern.fullmatch(subject)
        if match is None:
            return None
        name = match.expand(self.replacement)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class CertificatePrincipals:
    """Maps certificate subjects to principal names; memoises each subject's answer."""

    def __init__(self, rules: str) -> None:
        self._rules = parse_rules(rules)
        self._memo: dict[str, str | None] = {}

    def name(self, subject: str) -> str | None:
        """The principal name for `subject`, or None when no rule matches it."""
        try:
            return self._memo[subject]
        except KeyError:
            pass
        name = next((n for n in (rule.apply(subject) for rule in self._rules) if n is not None), None)
        if len(self._memo) < 10_000:  # certificates signed by the trusted CA: few distinct subjects
            self._memo[subject] = name
        return name


def parse_rules(text: str) -> list[_Rule]:
    """Kafka's `ssl.principal.mapping.rules`. Raises ConfigError on a malformed list."""
    rules: list[_Rule] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _RULE.match(text, position)
        if match is None or match.end() == position:
            raise ConfigError(f"ssl.principal.mapping.rules: cannot read the rule at {text[position:]!r}")
        position = match.end()
        if match.group(1):
            rules.append(_Rule(None, "", ""))
            continue
        pattern, replacement = match.group(2).replace("\\/", "/"), match.group(3).replace("\\/", "/")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"ssl.principal.mapping.rules: bad pattern {pattern!r}: {exc}") from None
        # Java's $1 is Python's \g<1>; a literal backslash stays one.
        python_replacement = re.sub(r"\$(\d+)", r"\\g<\1>", replacement.replace("\\", "\\\\"))
        rules.append(_Rule(compiled, python_replacement, match.group(4)))
    return rules or [_Rule(None, "", "")]


def subject_of(der: bytes) -> str:
    """The RFC 4514 subject of a DER certificate."""
    # Imported on the first client certificate, not at start-up: `cryptography.x509`
    # costs ~30 ms of every registry's start (bench/cold_start.py).
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
