"""What a request does, as authorization rules name it."""
from __future__ import annotations

import enum


class Operation(enum.Enum):
    READ = "read"  # any read of a subject's schemas, config or mode; compatibility checks
    WRITE = "write"  # register a schema version
    DELETE = "delete"  # delete a subject or version, soft or hard
    CONFIG = "config"  # set or delete a compatibility level
    MODE = "mode"  # set or delete a mode
    IMPORT = "import"  # register with an explicit id or version (IMPORT mode)

    # Members are singletons and compare by identity: hash them so, in C. (Enum's own
    # __hash__ is Python code hashing the name, a measurable share of a memoised decision.)
    __hash__ = object.__hash__


# Operations that change the registry: each one is audited, accepted or denied.
CHANGES = frozenset({Operation.WRITE, Operation.DELETE, Operation.CONFIG, Operation.MODE, Operation.IMPORT})
