"""The .proto files every schema may import without a reference, as in Confluent.

    INCLUDE_PATHS          # directories protoc searches after the schema's references
    is_bundled("google/type/money.proto")    # True: importable without a reference

Confluent's `ProtobufSchema.KNOWN_DEPENDENCIES` are google/protobuf/*.proto (which
grpcio-tools ships beside protoc) and sixteen google/type/*.proto (which Confluent takes
from Google's proto-google-common-protos jar). The google/type files are shipped here,
under include/google/type/, unchanged from googleapis-common-protos 1.76.0 (Apache-2.0,
their licence headers kept). A copy rather than a dependency on that package: the
server's dependencies (pyproject's schema-types and server extras) do not include it,
and protoc needs the .proto text, which only its installed files hold.
tests/unit/registry/schema_types/protobuf/test_as_confluent_accepts.py checks the copies against the package
wherever it is installed (the test extra has it), so an upgrade shows a difference.
Only the files Confluent bundles are here (not localized_text.proto): a schema importing
another must register it as a reference, as with Confluent.
"""
from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Final

GOOGLE_TYPES: Final = Path(__file__).with_name("include") / "google" / "type"
"""Where the bundled google/type/*.proto files are."""


def _well_known_root() -> Path:
    # grpcio-tools' directory without importing it: the registry process never runs
    # protoc itself (protoc_worker.py does), so it need not load grpc_tools.
    spec = importlib.util.find_spec("grpc_tools")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("grpcio-tools is not installed: PROTOBUF schemas need it")
    return Path(next(iter(spec.submodule_search_locations))) / "_proto"


INCLUDE_PATHS: Final = (_well_known_root(), GOOGLE_TYPES.parent.parent)
"""protoc's --proto_path list after the schema's own files, in search order."""


@cache
def bundled_files() -> frozenset[str]:
    """Import paths of every bundled file ("google/protobuf/any.proto", ...). Listed once."""
    return frozenset(path.relative_to(root).as_posix()
                     for root in INCLUDE_PATHS for path in root.rglob("*.proto"))


def is_bundled(name: str) -> bool:
    """Whether `import "<name>";` finds a bundled file when no reference is named so."""
    return name in bundled_files()
