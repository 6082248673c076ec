"""Subject and context names, as Confluent spells and checks them.

A subject in a context other than the default one is written `:.ctx:name`; `:.:name`
is the plain `name`. A context's own config and mode live under the subject `:.ctx:`.
"""
from __future__ import annotations

import re

from registry import errors
from store.records import DEFAULT_CONTEXT, context_of

# Reserved by Confluent: the global and the empty subject in its own records.
_RESERVED_SUBJECTS = frozenset({"__GLOBAL", "__EMPTY"})
_GLOBAL_CONTEXT = ".__GLOBAL"


def check_subject(subject: str, *, config_or_mode: bool = False) -> None:
    """Refuse a subject Confluent refuses (42208): one holding a control character
    (U+0000-U+001F, U+007F-U+009F, as Java's `isISOControl`), a reserved name, or (but
    for config and mode) one in the global context."""
    if (subject_name(subject) in _RESERVED_SUBJECTS
            or _ISO_CONTROL.search(subject) is not None
            or (not config_or_mode and context_of(subject) == _GLOBAL_CONTEXT)):
        raise errors.InvalidSubject(f"The specified subject '{subject}' is not a valid.")


_ISO_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def normalize_subject(subject: str) -> str:
    """A subject as Confluent stores it: `:.ctx:name` for another context, a plain name
    for the default one (`:.:name` is `name`)."""
    if subject[:2] != ":.":
        return subject
    context = context_of(subject)
    name = subject_name(subject)
    return name if context == DEFAULT_CONTEXT else f":{context}:{name}"


def normalize_context(name: str) -> str:
    """A context named in a path (`.ctx`, `:.ctx:` or `ctx`) as its subject `:.ctx:`.
    Raises InvalidSubject for a name holding a colon or a control character."""
    inner = name[1:] if name.startswith(":") else name
    inner = inner[:-1] if inner.endswith(":") else inner
    if ":" in inner or not inner or _ISO_CONTROL.search(inner) is not None:
        raise errors.InvalidSubject(f"The specified context '{name}' is not a valid.")
    if not inner.startswith("."):
        inner = "." + inner
    return f":{inner}:"


def subject_name(subject: str) -> str:
    """The name of a subject without its context (`name` of `:.ctx:name`)."""
    if subject[:2] != ":.":
        return subject
    end = subject.find(":", 2)
    return subject[end + 1:] if end >= 0 else ""


def context_subject(subject: str) -> str:
    """The subject standing for the context of `subject` (`:.ctx:`), where a context's
    config and mode are kept."""
    return f":{context_of(subject)}:"


def qualified_context(subject: str) -> str:
    """A subject's context as Confluent prints it in messages: "" for the default one."""
    context = context_of(subject)
    return "" if context == DEFAULT_CONTEXT else f":{context}:"
