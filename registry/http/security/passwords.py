"""HTTP Basic users: Confluent's users-file layout, with salted argon2id hashes.

    # authentication.users.file
    alice: $argon2id$v=19$m=19456,t=2,p=1$aWJpeWh1c2FsdA$Vq8xk...,developers,admins

Each line is `name: credential[,role...]`, read as Java reads a `.properties` file,
the layout of Confluent's `PropertyFileLoginModule`. Confluent's credential is the
password in plain text, or an `MD5:`/`CRYPT:` digest: unsalted and fast, as good as
plain text to anyone who reads the file. Ours is an argon2id hash in the PHC string
format (argon2-cffi), salted and memory-hard; any other credential is refused when the
file is read. `schema-registry hash-password` prints a line.

Checking a password costs tens of milliseconds by design, so `BasicCredentials`
(registry.http.security.authenticator) remembers verified headers for a while.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from registry.settings import ConfigError, parse_properties

# OWASP's minimum for argon2id (19 MiB, 2 passes, 1 lane): the default of
# `hash-password`; a hash carries its own parameters, so stronger ones just work.
DEFAULT_TIME_COST = 2
DEFAULT_MEMORY_KIB = 19 * 1024
DEFAULT_PARALLELISM = 1

_PREFIX = "$argon2id$"


@dataclass(frozen=True)
class User:
    name: str
    password_hash: str = field(repr=False)
    roles: frozenset[str] = frozenset()


class Users:
    """The users of a users file, and the one way to check a password."""

    def __init__(self, users: dict[str, User]) -> None:
        self._users = users
        self._hasher = PasswordHasher()
        # Unknown names are checked against this, so that a wrong name costs as long
        # as a wrong password and response times do not tell which names exist.
        self._decoy = PasswordHasher(DEFAULT_TIME_COST, DEFAULT_MEMORY_KIB, 1, 32, 16).hash("decoy")

    def __len__(self) -> int:
        return len(self._users)

    def check(self, name: str, password: str) -> User | None:
        """The user if `password` is theirs, else None. Blocks for one argon2 verification."""
        user = self._users.get(name)
        try:
            self._hasher.verify(user.password_hash if user else self._decoy, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        return user


def parse_users(data: bytes) -> Users:
    """A users file's content. Raises ConfigError naming the first unusable line's user."""
    users: dict[str, User] = {}
    for name, value in parse_properties(data, source="users file").items():
        password_hash, roles = _split_credential(value.strip())
        if not password_hash.startswith(_PREFIX):
            raise ConfigError(
                f"user {name!r}: the credential must be an argon2id hash ({_PREFIX}...); plain text, MD5: and "
                "CRYPT: credentials are refused. Make one with `schema-registry hash-password`")
        users[name] = User(name, password_hash, roles)
    return Users(users)


def _split_credential(value: str) -> tuple[str, frozenset[str]]:
    """(hash, roles): a PHC string has commas among its parameters, so the roles start at
    the first comma after its last `$` (the hash itself is base64, without commas)."""
    last_dollar = value.rfind("$")
    comma = value.find(",", last_dollar + 1) if last_dollar >= 0 else value.find(",")
    if comma < 0:
        return value, frozenset()
    roles = frozenset(r.strip() for r in value[comma + 1:].split(",") if r.strip())
    return value[:comma].strip(), roles


def hash_password(password: str, *, time_cost: int = DEFAULT_TIME_COST, memory_kib: int = DEFAULT_MEMORY_KIB,
                  parallelism: int = DEFAULT_PARALLELISM) -> str:
    """A salted argon2id hash of `password` (a fresh random salt every call)."""
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_kib, parallelism=parallelism).hash(password)


def users_file_line(name: str, password: str, roles: list[str] | None = None, **cost: int) -> str:
    """One line of a users file, name escaped as Java's Properties.store would."""
    escaped = "".join("\\" + c if c in " =:#!\\" else c if c.isascii() else f"\\u{ord(c):04x}" for c in name)
    return f"{escaped}: {','.join([hash_password(password, **cost), *(roles or [])])}"
