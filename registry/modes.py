"""Registry modes, as Confluent defines them."""
from __future__ import annotations

import enum


class Mode(enum.Enum):
    READWRITE = "READWRITE"
    READONLY = "READONLY"
    # Like READONLY, but set globally it also overrides every subject's own mode.
    READONLY_OVERRIDE = "READONLY_OVERRIDE"
    # Registration takes explicit ids and versions and skips compatibility: for migrations.
    IMPORT = "IMPORT"
