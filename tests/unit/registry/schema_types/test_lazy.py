"""`SCHEMA_TYPES` imports each schema type on first use, not at start-up."""
from __future__ import annotations

import subprocess
import sys


def test_schema_types_are_imported_on_first_use_only():
    # A start-up that replays the log and serves Avro must not wait for JSON Schema's
    # and Protobuf's imports (bench/cold_start.py).
    code = ("import sys; import registry.http.server\n"
            "from registry.schema_types import SCHEMA_TYPES\n"
            "assert 'registry.schema_types.json_schema' not in sys.modules, 'JSON Schema imported at start'\n"
            "assert 'registry.schema_types.protobuf' not in sys.modules, 'Protobuf imported at start'\n"
            "assert sorted(SCHEMA_TYPES) == ['AVRO', 'JSON', 'PROTOBUF'], 'every type is named'\n"
            "assert SCHEMA_TYPES['JSON'].name == 'JSON' and SCHEMA_TYPES['JSON'] is SCHEMA_TYPES['JSON']\n"
            "assert 'registry.schema_types.json_schema' in sys.modules, 'asked for, JSON Schema is imported'\n"
            "assert SCHEMA_TYPES.get('XML') is None, 'an unknown type is absent, as from a dict'\n"
            "SCHEMA_TYPES.load_all(); assert 'registry.schema_types.protobuf' in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
