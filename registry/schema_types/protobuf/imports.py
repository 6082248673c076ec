"""Imports resolved as Confluent resolves them: across every reference given, whatever name
an import gives.

    stand_ins({"NoReference.proto": ref_text, "default": text_importing_NoReferenceNested})
    # -> {"NoReferenceNested.proto": 'syntax = "proto3";\nimport public "NoReference.proto";\n'}

Confluent never looks a file up by an import's name alone. Its ProtobufSchema holds a
map of every schema the references reach (AbstractSchemaProvider.resolveReferences),
resolves type names across all of them (diff/Context.collectTypeInfo), and, building
descriptors (toDynamicSchema), skips an import that names none of them. So a schema
importing "NoReferenceNested.proto" whose only reference is named "NoReference.proto"
is accepted, its types found in NoReference.proto.

protoc resolves an import by its file name or fails. To give it Confluent's answer, each
import naming neither a reference nor a bundled file (includes.py) gets a stand-in file
of that name that publicly imports the references, so whatever they define is visible
through it, and the import stays as written in the schema's descriptor and stored text.
Only the first stand-in lists the references; the others publicly import it, so the
stand-ins cost the number of references plus the number of unknown names, never their
product. A stand-in never imports a file that reaches an unknown name (it could import
itself through it, a cycle protoc refuses); that file's types stay unresolved through
stand-ins. With no reference to stand for it, an unknown import is left to protoc,
which refuses it naming the file.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from registry.schema_types.protobuf.includes import is_bundled

# Comments and string literals are matched whole, so that what they contain is never
# taken for an import; the alternatives are disjoint, so one pass is linear in the text.
_IMPORT: Final = re.compile(
    r"""
      //[^\n]*
    | /\*.*?(?:\*/|\Z)
    | (?<![\w.])import\s+(?:(?:public|weak|option)\s+)?"(?P<name>[^"\\\n]*)"
    | "(?:[^"\\\n]|\\.)*"?
    | '(?:[^'\\\n]|\\.)*'?
    """,
    re.VERBOSE | re.DOTALL,
)
_SAFE_NAME: Final = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*(?:/[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*)*")
"""Names a stand-in may have: relative, no '.' or '..' parts, nothing protoc or the worker's
file system would read differently (an import with escapes or odd characters is left to
protoc, which refuses it)."""
_MAX_NAME: Final = 1024
"""As compiler.check_reference_name."""


def import_names(text: str) -> list[str]:
    """The file names `text` imports, in order (escaped names are left out)."""
    return [match["name"] for match in _IMPORT.finditer(text) if match["name"] is not None]


def stand_ins(files: Mapping[str, str], references: Iterable[str]) -> dict[str, str]:
    """Stand-in file texts by name, for the imports in `files` (name -> .proto text, the
    schema and its references) that name no file there and no bundled file. `references`
    are the names a stand-in may import, in order. Empty when nothing needs one.

    Time is linear in the texts' length plus the number of imports.
    """
    imports = {name: import_names(text) for name, text in files.items()}
    unknown = list(dict.fromkeys(
        name for names in imports.values() for name in names
        if name not in files and not is_bundled(name)
        and len(name) <= _MAX_NAME and _SAFE_NAME.fullmatch(name)))
    if not unknown:
        return {}
    # Files that reach an unknown name, found backwards from the unknown names.
    importers: dict[str, list[str]] = {}
    for importer, names in imports.items():
        for name in names:
            importers.setdefault(name, []).append(importer)
    reaching: set[str] = set()
    pending = list(unknown)
    while pending:
        for importer in importers.get(pending.pop(), ()):
            if importer not in reaching:
                reaching.add(importer)
                pending.append(importer)
    visible = [name for name in references if name in files and name not in reaching]
    if not visible:
        return {}
    first, *others = unknown
    texts = {first: _stand_in(visible)}
    texts.update((name, _stand_in([first])) for name in others)
    return texts


def _stand_in(public_imports: list[str]) -> str:
    return 'syntax = "proto3";\n' + "".join(f'import public "{name}";\n' for name in public_imports)
