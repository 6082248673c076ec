"""Compatibility levels and how they combine a schema type's reader/writer check.

The type-specific question is only "can this reader read that writer?"
(`ParsedSchema.read_errors`). Which pairs to ask about, for which versions, is the
same for every schema type and lives here.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from registry.schema_types import ParsedSchema


class CompatibilityLevel(enum.Enum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        """The new schema must read data written with the old ones."""
        return self.value.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        """The old schemas must read data written with the new one."""
        return self.value.startswith(("FORWARD", "FULL"))


@dataclass(frozen=True)
class PreviousVersion:
    version: int
    schema: ParsedSchema


def incompatibilities(level: CompatibilityLevel, new: ParsedSchema,
                      previous: Sequence[PreviousVersion], *, all_versions: bool | None = None
                      ) -> list[str]:
    """Reasons `new` breaks `level` against `previous` (oldest first); [] if compatible.

    Non-transitive levels compare with the latest previous version only, unless
    `all_versions` says otherwise (the compatibility endpoint for a single version
    passes just that version).
    """
    if level is CompatibilityLevel.NONE or not previous:
        return []
    use_all = level.transitive if all_versions is None else all_versions
    against = previous if use_all else previous[-1:]
    messages: list[str] = []
    # Newest first, as Confluent reports, so the most relevant version comes first.
    for old in reversed(against):
        found: list[str] = []
        if level.backward:
            found += [f"{reason} (new schema reading data written with version {old.version})"
                      for reason in new.read_errors(old.schema)]
        if level.forward:
            found += [f"{reason} (version {old.version} reading data written with the new schema)"
                      for reason in old.schema.read_errors(new)]
        if found:
            messages += found
            messages.append(f"{{oldSchemaVersion: {old.version}}}")
    if messages:
        messages.append(f"{{compatibility: '{level.value}'}}")
    return messages
