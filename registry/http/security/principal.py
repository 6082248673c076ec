"""Who is calling: the principal an authenticated request acts as."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller as authorization rules name it.

    `name` is the user (BASIC), the token's subject claim (BEARER) or the mapped
    certificate subject (CERTIFICATE); `roles` come from the users file or the token's
    groups claim. `method` says how the caller proved it, for the audit log. Hashable,
    so decisions can be memoised per principal.
    """

    name: str
    method: str  # BASIC, BEARER, CERTIFICATE, ANONYMOUS, or FORWARDED:<method>
    roles: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "method": self.method, "roles": sorted(self.roles)}


# Every caller, when authentication.method is NONE (Kafka names it the same).
ANONYMOUS = Principal("ANONYMOUS", "ANONYMOUS")
