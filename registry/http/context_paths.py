"""`/contexts/{context}/...`: every subject, schema, config and mode route under a context.

    context_path("POST", "/contexts/.c1/subjects/s2/versions", b"")
    # -> ("/subjects/:.c1:s2/versions", b"")

Confluent serves these by rewriting the request before it is matched (its
`ContextFilter`): the segment after `subjects` (and a root `config` or `mode`) is
qualified with the context unless it names one already (`:.x:` or `:*:`); a root
`config` or `mode` with no subject names the context itself (`/config/:.c1:`); reads
of schema ids get `?subject=` and listings of subjects and schemas `?subjectPrefix=`
qualified the same way. Go's franz-go client uses only this form. The rewritten
request is then an ordinary one: it is routed, authenticated, authorized on the
qualified subject it names, and forwarded, as if the client had sent it so.
Written here because it is Confluent's own rewriting rule, which no library has.
"""
from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode

from registry import errors
from registry.subjects import normalize_context

PREFIX = "/contexts/"


class BadContext(ValueError):
    """The context segment cannot name a context (Confluent answers 400)."""


def context_path(method: str, path: str, query: bytes) -> tuple[str, bytes] | None:
    """(path, query) the request means when `path` is under `/contexts/{context}/`, else
    None (nothing to rewrite: `/contexts` and `/contexts/{context}` are routes of their
    own). Raises BadContext for a context segment that names none. Never blocks."""
    if not path.startswith(PREFIX):
        return None
    segments = path[len(PREFIX):].split("/")
    if len(segments) < 2:
        return None
    try:
        context = normalize_context(unquote(segments[0], errors="replace"))
    except errors.RegistryError as exc:
        raise BadContext(str(exc)) from None
    if context == ":.:":
        context = ""  # the default context: its subjects are unqualified
    prefix = quote(context, safe=":.")
    rest = segments[1:]
    rewritten: list[str] = []
    qualify_next = config_or_mode = False
    for index, segment in enumerate(rest):
        if qualify_next:
            if not _names_context(segment):
                segment = prefix + segment
            qualify_next = False
        elif segment == "subjects" or (index == 0 and segment in ("config", "mode")):
            qualify_next = True
            config_or_mode = index == 0 and segment in ("config", "mode")
        rewritten.append(segment)
    if config_or_mode and qualify_next and prefix:
        rewritten.append(prefix)  # `/contexts/.c1/config` is the context's own config
    new_path = "/" + "/".join(rewritten)
    return new_path, _qualified_query(method, new_path, query, context)


def _qualified_query(method: str, path: str, query: bytes, context: str) -> bytes:
    bare = path.strip("/")
    if bare.startswith("schemas/ids"):
        name = "subject"
    elif bare in ("schemas", "subjects"):
        name = "subjectPrefix"
    else:
        return query
    pairs = parse_qsl(query.decode("utf-8", "replace"), keep_blank_values=True)
    values = [v for k, v in pairs if k == name] or [""]
    if name == "subject":
        values = values[:1]  # Confluent replaces the first
    kept = [(k, v) for k, v in pairs if k != name]
    kept += [(name, v if _names_context(v) else context + v) for v in values]
    return urlencode(kept, quote_via=quote, safe=":.*").encode("ascii")


def _names_context(segment: str) -> bool:
    text = unquote(segment, errors="replace")
    return text.startswith(":.") or text.startswith(":*:")
