"""Who is calling: the principal an authenticated request acts as."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller as authorization rules name it.

    `name` is the user (BASIC), the token's subject claim (BEARER) or the mapped
    certificate subject (CERTIFICATE); `roles` come from the users file or the token's
    groups claim. `method` says how the caller proved it, for the audit log. Hashable,
    so decisions can be memoised per principal.
    """

    name: str
    method: str  # BASIC, BEARER, CERTIFICATE or ANONYMOUS
    roles: frozenset[str] = frozenset()
    # Principals key the decisions memoised on every request: hash once.
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.name, self.method, self.roles)))

    def __hash__(self) -> int:
        return self._hash

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "method": self.method, "roles": sorted(self.roles)}


# Every caller, when authentication.method is NONE (Kafka names it the same).
ANONYMOUS = Principal("ANONYMOUS", "ANONYMOUS")
