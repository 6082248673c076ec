"""Moving a registry's schemas elsewhere: export, import (ids and versions kept) and copy.

    schema-registry export backup.tar.gz --url http://confluent:8081 --prefix orders-
    schema-registry import backup.tar.gz --url http://ours:8081

An export is a directory (or a .tar.gz/.tgz/.zip of one) holding
* `manifest.json`: what was exported, from where, and how many schemas;
* `schemas.jsonl`: every version, one `GET /schemas` body a line (subject, version, id,
  type, references, metadata, rules, schema text, and `deleted` for soft-deleted ones);
* `settings.jsonl`: config and mode, global (for a whole registry), each selected
  context's own (subject `:.ctx:`) and each subject's, one line each.

An import switches the target to IMPORT mode and registers each version with its id
and version number, a schema only after the versions it references (in waves, each
wave's requests concurrent). Into a registry of ours, 500 versions go in one
`POST /import/schemas` (one request, one append), and 500 settings in one `POST
/import/settings`; where those routes do not exist (Confluent, Karapace), or a batch
is refused whole, each version has its own `POST /subjects/{s}/versions` and each
setting its own `PUT`. The settings go in once every version is in (a READONLY subject
would refuse its own versions), configs before modes, the global mode last.

It is resumable: versions the target already holds with the same id are skipped and
settings are set again, so running it again after a failure or an interruption finishes
the job; a target holding nothing but versions of the export needs no --force for it.
An import that completes leaves the target in the export's global mode (a whole
registry's export carries it; else the mode the target had). One that fails or is
interrupted (Ctrl-C, SIGTERM) puts back the global mode the target had before (with a
version missing, no setting was applied); one killed outright leaves IMPORT, and its
re-run, finding its record (`import_journal`), ends with the mode from before the first.

Peak memory is about one copy of the export's schemas (the import plans the order of
the whole set); exports stream page by page.
"""
from __future__ import annotations

import argparse
import contextlib
import signal
import tarfile
import tempfile
import threading
import time
import zipfile
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any
from urllib.parse import quote

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from registry.admin.import_journal import ImportJournal
from registry.admin.output import EXIT_ERROR, EXIT_OK, Output, describe_error
from registry.client import SchemaRegistryError
from registry.client.transport import RegistryUnreachable, Transport

FORMAT = "schema-registry-py export"
FORMAT_VERSION = 1
PAGE = 10_000
# Submitted ahead of the workers, so that a wave of 100,000 does not hold 100,000 futures.
_BATCH = 2_000
# Schemas per `POST /import/schemas` (ours): ~300 KB bodies, within the body limit; also
# settings per `POST /import/settings`.
_BULK = 500
_NO_SUCH_ROUTE = (404, 405)
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
_OPERATION_NOT_PERMITTED = 42205


class MigrationError(Exception):
    """An export or import cannot go on (unreadable export, target refuses IMPORT, ...)."""


def q(subject: str) -> str:
    return quote(subject, safe="")


def selection_prefix(prefix: str, context: str | None) -> str:
    """The subject prefix that selects `context` (`.staging` or `staging`), else `prefix`."""
    if context is None:
        return prefix
    return f":{context if context.startswith('.') else '.' + context}:"


def _progress(enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), disable=not enabled, transient=False)


# ---- export -------------------------------------------------------------------------

@dataclass
class ExportSummary:
    schemas: int = 0
    subjects: int = 0
    settings: int = 0
    seconds: float = 0.0


def schema_pages(transport: Transport, prefix: str, deleted: bool) -> Iterator[list[dict[str, Any]]]:
    """Every version under `prefix`, `PAGE` at a time, in the registry's order (subject,
    then version). Each page is one request; a registry changed meanwhile may shift pages,
    so a version is yielded at most once but may be missed: export a quiet registry."""
    offset = 0
    seen: set[tuple[str, int]] = set()
    while True:
        page = transport.request("GET", "/schemas", query={"subjectPrefix": prefix, "deleted": str(deleted).lower(),
                                                           "offset": offset, "limit": PAGE})
        fresh = [b for b in page if (b["subject"], b["version"]) not in seen]
        seen.update((b["subject"], b["version"]) for b in fresh)
        if fresh:
            yield fresh
        if len(page) < PAGE:
            return
        offset += PAGE


def export_to(transport: Transport, directory: Path, *, prefix: str, deleted: bool, source: str,
              workers: int = 8, subject_settings: bool = True,
              progress: Progress | None = None) -> ExportSummary:
    """Write an export of `transport`'s registry under `directory` (created). Blocks on
    one request per page of schemas and two per subject (its config and mode, `workers`
    at a time, while the pages are read; none without `subject_settings`). Raises
    SchemaRegistryError or RegistryUnreachable from the source."""
    started = time.monotonic()
    directory.mkdir(parents=True, exist_ok=True)
    summary = ExportSummary()
    progress = progress or _progress(False)
    subjects = transport.request("GET", "/subjects", query={"subjectPrefix": prefix, "deleted": "true"})
    summary.subjects = len(subjects)
    task = progress.add_task("export schemas", total=None)
    # A context's own settings (subject `:.ctx:`) apply to its subjects that have none:
    # they go with the context's subjects, as the global ones go with a whole registry.
    with_settings = contexts_in(transport, prefix) + (subjects if subject_settings else [])
    settings_task = progress.add_task("export settings", total=len(with_settings) + (0 if prefix else 1))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        # The settings (two requests a subject) are fetched while the schemas are paged.
        settings = pool.map(lambda s: _settings_of(transport, s), with_settings)
        with open(directory / "schemas.jsonl", "wb") as out:
            for page in schema_pages(transport, prefix, deleted):
                out.write(b"".join(orjson.dumps(body) + b"\n" for body in page))
                summary.schemas += len(page)
                progress.update(task, advance=len(page))
        progress.update(task, total=summary.schemas)
        with open(directory / "settings.jsonl", "wb") as out:
            if not prefix:
                out.write(orjson.dumps(_settings_of(transport, None)) + b"\n")
                progress.update(settings_task, advance=1)
            for found in settings:
                if found["config"] is not None or found["mode"] is not None:
                    out.write(orjson.dumps(found) + b"\n")
                    summary.settings += 1
                progress.update(settings_task, advance=1)
    summary.seconds = time.monotonic() - started
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "source": source, "prefix": prefix,
                "deleted": deleted, "schemas": summary.schemas, "subjects": summary.subjects,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (directory / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return summary


def contexts_in(transport: Transport, prefix: str) -> list[str]:
    """The contexts (as their subjects, `:.ctx:`) whose own settings an export under
    `prefix` carries: every context but the default one for a whole registry, the one
    context a context's prefix names, none for another prefix or where the registry
    does not list contexts (`GET /contexts` is Confluent 7's)."""
    if prefix:
        name = prefix[1:-1] if prefix.startswith(":.") and prefix.endswith(":") and len(prefix) > 3 else ""
        return [prefix] if name and ":" not in name else []
    try:
        contexts = transport.request("GET", "/contexts")
    except SchemaRegistryError as exc:
        if exc.http_status_code in _NO_SUCH_ROUTE:
            return []
        raise
    return [f":{c}:" for c in contexts if isinstance(c, str) and c not in ("", ".")]


def _settings_of(transport: Transport, subject: str | None) -> dict[str, Any]:
    """A subject's own config and mode (None where it has none), or the global ones."""
    path = "" if subject is None else f"/{q(subject)}"
    found: dict[str, Any] = {"subject": subject}
    for resource, missing in (("config", 40408), ("mode", 40409)):
        try:
            answer = transport.request("GET", f"/{resource}{path}")
        except SchemaRegistryError as exc:
            if exc.error_code != missing and exc.http_status_code != 404:
                raise
            answer = None
        if resource == "mode" and answer is not None:
            answer = answer.get("mode")
        found[resource] = answer
    return found


def write_archive(directory: Path, destination: Path) -> None:
    """`directory`'s export files as the archive `destination` names (.tar.gz/.tgz/.zip)."""
    names = ("manifest.json", "schemas.jsonl", "settings.jsonl")
    partial = destination.with_name(destination.name + ".partial")
    if destination.name.endswith(".zip"):
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name in names:
                archive.write(directory / name, name)
    else:
        with tarfile.open(partial, "w:gz", compresslevel=6) as archive:
            for name in names:
                archive.add(directory / name, name)
    partial.replace(destination)  # never a half-written archive under the real name


def is_archive(path: Path) -> bool:
    return path.name.endswith(_ARCHIVE_SUFFIXES)


def export_command(args: argparse.Namespace, out: Output, transport: Transport) -> int:
    destination = Path(args.destination)
    prefix = selection_prefix(args.prefix, args.context)
    source = transport.nodes[0].url
    with _progress(not (args.no_progress or args.json)) as progress:
        if is_archive(destination):
            with tempfile.TemporaryDirectory(dir=destination.parent or None) as work:
                summary = export_to(transport, Path(work), prefix=prefix, deleted=not args.no_deleted,
                                    source=source, subject_settings=not args.no_subject_settings,
                                    progress=progress)
                write_archive(Path(work), destination)
        else:
            summary = export_to(transport, destination, prefix=prefix, deleted=not args.no_deleted,
                                source=source, subject_settings=not args.no_subject_settings,
                                progress=progress)
    out.table(["exported", "count"], [("schemas", summary.schemas), ("subjects", summary.subjects),
                                      ("subject settings", summary.settings),
                                      ("seconds", f"{summary.seconds:.1f}")],
              data={"destination": str(destination), **vars(summary)})
    return EXIT_OK


# ---- import -------------------------------------------------------------------------

@dataclass
class ImportSummary:
    schemas: int = 0
    imported: int = 0
    skipped: int = 0
    soft_deleted: int = 0
    settings: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    # The global mode the import set at its end (None: it left the mode as it was).
    mode_after: str | None = None
    interrupted: bool = False
    seconds: float = 0.0


@contextlib.contextmanager
def open_export(source: Path) -> Iterator[Callable[[str], IO[bytes]]]:
    """A function opening one file of the export at `source` (a directory or archive),
    by name, for reading; members of an archive are read in place, never extracted."""
    if not source.exists():
        raise MigrationError(f"{source}: no such export")
    if source.is_dir():
        yield lambda name: open(source / name, "rb")
        return
    try:
        if source.name.endswith(".zip"):
            with zipfile.ZipFile(source) as archive:
                yield lambda name: archive.open(name)
        else:
            with tarfile.open(source, "r:*") as tar:
                def member(name: str) -> IO[bytes]:
                    handle = tar.extractfile(name)
                    if handle is None:
                        raise KeyError(name)
                    return handle
                yield member
    except (tarfile.TarError, zipfile.BadZipFile) as exc:
        raise MigrationError(f"{source}: not an export archive ({exc})") from None


def read_export(opener: Callable[[str], IO[bytes]]) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                                list[dict[str, Any]]]:
    """The manifest, the schemas and the settings of an export. Raises MigrationError."""
    try:
        with opener("manifest.json") as handle:
            manifest = orjson.loads(handle.read())
        if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
            raise MigrationError(f"not an export of this tool (format {manifest.get('format')!r}, "
                                 f"version {manifest.get('format_version')!r})")
        with opener("schemas.jsonl") as handle:
            schemas = [orjson.loads(line) for line in handle if line.strip()]
        with opener("settings.jsonl") as handle:
            settings = [orjson.loads(line) for line in handle if line.strip()]
    except (KeyError, FileNotFoundError) as exc:
        raise MigrationError(f"the export lacks {exc}") from None
    except orjson.JSONDecodeError as exc:
        raise MigrationError(f"the export is damaged: {exc}") from None
    if len(schemas) != manifest.get("schemas"):
        raise MigrationError(f"the export is incomplete: {len(schemas)} schemas of {manifest.get('schemas')}")
    return manifest, schemas, settings


def waves(schemas: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """`schemas` in groups that can be registered concurrently: each after every group
    holding a version it references (Kahn's algorithm, linear in schemas and references).
    References to versions outside the list are taken to exist in the target already.
    Raises MigrationError for a reference cycle."""
    index = {(s["subject"], s["version"]): i for i, s in enumerate(schemas)}
    waiting = [0] * len(schemas)
    dependents: dict[int, list[int]] = defaultdict(list)
    for i, body in enumerate(schemas):
        for ref in body.get("references") or ():
            j = index.get((ref["subject"], ref["version"]))
            if j is not None:
                waiting[i] += 1
                dependents[j].append(i)
    current = deque(i for i in range(len(schemas)) if waiting[i] == 0)
    result: list[list[dict[str, Any]]] = []
    placed = 0
    while current:
        # Lower ids first within a wave: the order the source registered them in.
        wave = sorted(current, key=lambda i: schemas[i]["id"])
        result.append([schemas[i] for i in wave])
        placed += len(wave)
        current = deque()
        for i in wave:
            for k in dependents.get(i, ()):
                waiting[k] -= 1
                if waiting[k] == 0:
                    current.append(k)
    if placed != len(schemas):
        raise MigrationError("the export's references form a cycle")
    return result


def _register_body(body: dict[str, Any]) -> dict[str, Any]:
    wanted = {"schema": body["schema"], "id": body["id"], "version": body["version"]}
    for key in ("schemaType", "references", "metadata", "ruleSet"):
        if body.get(key) is not None:
            wanted[key] = body[key]
    return wanted


def import_into(transport: Transport, schemas: list[dict[str, Any]], settings: list[dict[str, Any]], *,
                prefix: str, force: bool, keep_import_mode: bool, workers: int,
                progress: Progress | None = None, journal: ImportJournal | None = None) -> ImportSummary:
    """Import `schemas` and `settings` into `transport`'s registry, ids and versions kept.

    Blocks on one request per 500 versions to import and per 500 settings (one per
    version or setting where the target has no bulk import) and per version to
    soft-delete, `workers` at a time, plus a page of the target's schemas per 10,000.
    A version the registry refuses is recorded in the summary's `failed` and the rest go
    on; the settings are applied only once every version is in. Ctrl-C (and SIGTERM,
    under `terminate_as_interrupt`) stops it, recorded as `interrupted`.

    The target's global mode: IMPORT while versions go in; afterwards the export's own
    (a whole registry's export carries it) when all went well, else the one it had before
    (`journal` remembers that across a killed run); IMPORT with `keep_import_mode`.
    Raises MigrationError if the target will not switch to IMPORT mode, having changed nothing.
    """
    started = time.monotonic()
    progress = progress or _progress(False)
    summary = ImportSummary(schemas=len(schemas))
    existing: dict[tuple[str, int], dict[str, Any]] = {}
    for page in schema_pages(transport, prefix, deleted=True):
        existing.update(((b["subject"], b["version"]), {"id": b["id"], "deleted": bool(b.get("deleted"))})
                        for b in page)
    todo, to_delete = [], []
    for body in schemas:
        there = existing.get((body["subject"], body["version"]))
        if there is None:
            todo.append(body)
        elif there["id"] != body["id"]:
            summary.failed.append({"subject": body["subject"], "version": body["version"], "id": body["id"],
                                   "message": f"the target has this version with id {there['id']}"})
            continue
        else:
            summary.skipped += 1
        if body.get("deleted") and not (there or {}).get("deleted"):
            to_delete.append(body)
    resuming = not summary.failed and _holds_only(transport, existing, schemas, prefix)
    del existing
    mode = _GlobalMode.find(transport, journal)
    task = progress.add_task("import schemas", total=len(schemas), completed=summary.skipped)
    lock = threading.Lock()
    # Not `with`: its exit would wait for every queued request, where an interrupted
    # import must stop sending at once and put the target's mode back.
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    complete = False
    try:
        if todo or to_delete:
            # A target holding nothing but versions of this export is this import's own
            # earlier run: forcing IMPORT on it brings in nothing the export does not.
            mode.enter_import(force or resuming)
        _import_versions(transport, todo, to_delete, summary, pool, lock, progress, task)
        if not summary.failed:
            _import_settings(transport, settings, summary, pool, lock)
        complete = not summary.failed
    except KeyboardInterrupt:
        summary.interrupted = True
    except (SchemaRegistryError, RegistryUnreachable) as exc:
        # The target stopped answering (or answered what no request expects): reported
        # with the rest, after its mode is put back if it can be.
        summary.failed.append({"subject": None, "error_code": getattr(exc, "error_code", None),
                               "message": describe_error(exc)})
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        exported = next((s.get("mode") for s in settings if s.get("subject") is None), None)
        mode.leave(summary, exported if complete else None, keep_import_mode)
    summary.seconds = time.monotonic() - started
    return summary


def _holds_only(transport: Transport, existing: dict[tuple[str, int], dict[str, Any]],
                schemas: list[dict[str, Any]], prefix: str) -> bool:
    """Whether every version the target holds is one of `schemas`, with the same id
    (`existing`: the target's versions under `prefix`, none differing in id)."""
    exported = {(body["subject"], body["version"]) for body in schemas}
    if not existing.keys() <= exported:
        return False
    if not prefix:
        return True
    # Beyond the prefix, the target must hold nothing at all.
    outside = transport.request("GET", "/subjects", query={"deleted": "true"})
    return all(subject.startswith(prefix) for subject in outside)


class _GlobalMode:
    """The target's global mode around an import: what it was, whether the import holds
    the target in IMPORT (and so must put it back), and `journal`'s record of it."""

    def __init__(self, transport: Transport, current: str, before: str, holding: bool,
                 journal: ImportJournal | None) -> None:
        self.transport = transport
        self.current = current
        self.before = before
        self.holding = holding
        self.journal = journal

    @classmethod
    def find(cls, transport: Transport, journal: ImportJournal | None) -> _GlobalMode:
        current = transport.request("GET", "/mode").get("mode")
        # In IMPORT with a record: an import of ours was killed there; it had found `recorded`.
        recorded = journal.recorded_mode() if journal is not None and current == "IMPORT" else None
        return cls(transport, current, recorded or current, recorded is not None, journal)

    def enter_import(self, force: bool) -> None:
        """Switch the target to IMPORT unless it is there. Raises MigrationError if it refuses."""
        if self.current == "IMPORT":
            return
        if self.journal is not None:
            self.journal.begin(self.current)
        # Held from before the request: if it is interrupted, whether the switch happened
        # is unknown, and putting `before` back is right either way.
        self.holding = True
        try:
            self.transport.request("PUT", "/mode", query={"force": "true"} if force else None,
                                   body={"mode": "IMPORT"})
        except SchemaRegistryError as exc:
            self.holding = False
            if self.journal is not None:
                self.journal.end()
            if exc.error_code == _OPERATION_NOT_PERMITTED:
                raise MigrationError(f"the target refuses IMPORT mode ({exc.error_message}); pass --force to "
                                     "import into a registry that already has schemas") from None
            raise
        self.current = "IMPORT"

    def leave(self, summary: ImportSummary, exported: str | None, keep_import_mode: bool) -> None:
        """Set the mode the import ends with: `exported` (the export's global mode, given
        for a complete import), else `before` where the import holds the target; IMPORT,
        untouched, with `keep_import_mode`. Records it, or why it could not, in `summary`."""
        if keep_import_mode:
            if self.journal is not None:
                self.journal.end()  # the operator takes the mode over
            summary.mode_after = self.current if self.holding else None
            return
        wanted = exported if exported is not None else (self.before if self.holding else None)
        if wanted is None:
            return
        try:
            # IMPORT on a registry with schemas needs force; here it is the export's own.
            self.transport.request("PUT", "/mode", query={"force": "true"} if wanted == "IMPORT" else None,
                                   body={"mode": wanted})
        except (SchemaRegistryError, RegistryUnreachable) as exc:
            # The journal stays: a re-run puts it back.
            summary.failed.append({"subject": None, "error_code": getattr(exc, "error_code", None),
                                   "message": f"the global mode was not set to {wanted}: {describe_error(exc)}"})
            return
        if exported is not None:
            summary.settings += 1
        summary.mode_after = wanted
        if self.journal is not None:
            self.journal.end()


def _import_versions(transport: Transport, todo: list[dict[str, Any]], to_delete: list[dict[str, Any]],
                     summary: ImportSummary, pool: ThreadPoolExecutor, lock: threading.Lock,
                     progress: Progress, task: TaskID) -> None:
    """Register `todo` wave by wave (bulk where the target has it), then soft-delete
    `to_delete`, recording each outcome in `summary`."""

    def register(body: dict[str, Any]) -> None:
        try:
            transport.request("POST", f"/subjects/{q(body['subject'])}/versions", body=_register_body(body))
            with lock:
                summary.imported += 1
        except SchemaRegistryError as exc:
            with lock:
                summary.failed.append({"subject": body["subject"], "version": body["version"], "id": body["id"],
                                       "error_code": exc.error_code, "message": exc.error_message})
        progress.update(task, advance=1)

    def soft_delete(body: dict[str, Any]) -> None:
        try:
            transport.request("DELETE", f"/subjects/{q(body['subject'])}/versions/{body['version']}")
            with lock:
                summary.soft_deleted += 1
        except SchemaRegistryError as exc:
            with lock:
                summary.failed.append({"subject": body["subject"], "version": body["version"],
                                       "error_code": exc.error_code, "message": f"soft delete: {exc.error_message}"})

    bulk = [True]  # the target serves POST /import/schemas, as far as we know

    def register_many(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Import `chunk` in one request; the versions still to register one by one
        (all of them when the target has no bulk import or refused the batch whole)."""
        results = _post_bulk(transport, "/import/schemas", "schemas", bulk, lambda: [
            dict(_register_body(body), subject=body["subject"]) for body in chunk])
        if results is None:
            return chunk
        with lock:
            for body, result in zip(chunk, results):
                if "error_code" in result:
                    summary.failed.append({"subject": body["subject"], "version": body["version"],
                                           "id": body["id"], "error_code": result.get("error_code"),
                                           "message": result.get("message", "")})
                else:
                    summary.imported += 1
        progress.update(task, advance=len(chunk))
        return []

    for wave in waves(todo):
        for start in range(0, len(wave), _BATCH):
            part = wave[start:start + _BATCH]
            if bulk[0]:
                chunks = [part[i:i + _BULK] for i in range(0, len(part), _BULK)]
                part = [body for rest in pool.map(register_many, chunks) for body in rest]
            list(pool.map(register, part))
    list(pool.map(soft_delete, to_delete))


def _post_bulk(transport: Transport, path: str, name: str, bulk: list[bool],
               entries: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]] | None:
    """POST `entries()` under `name` to one of our bulk routes; the per-entry results,
    or None where the entries must go one request each: the route does not exist (a
    404 or 405 clears `bulk`, so later calls do not try again), the batch was refused
    whole, or the answer is not one result per entry."""
    if not bulk[0]:
        return None
    sent = entries()
    try:
        answer = transport.request("POST", path, body={name: sent})
    except SchemaRegistryError as exc:
        if exc.http_status_code in _NO_SUCH_ROUTE:
            bulk[0] = False
        return None
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list) or len(results) != len(sent):
        return None
    return results


def _import_settings(transport: Transport, settings: list[dict[str, Any]], summary: ImportSummary,
                     pool: ThreadPoolExecutor, lock: threading.Lock) -> None:
    """Apply the exported configs, then the modes (a READONLY subject would refuse its
    own versions), recording each in `summary`: `_BULK` a `POST /import/settings` where
    the target has it (ours; one append each), else, or for a batch refused whole, one
    `PUT` per setting, `pool`'s workers at a time. The global mode is not among them:
    `_GlobalMode.leave` sets it last."""
    bulk = [True]  # the target serves POST /import/settings, as far as we know

    def apply_many(chunk: list[tuple[dict[str, Any], str]]) -> list[tuple[dict[str, Any], str]]:
        """Apply `chunk` in one request; the settings still to apply one by one."""
        # Each entry as the route takes it: a config object, or a mode's name.
        results = _post_bulk(transport, "/import/settings", "settings", bulk, lambda: [
            {"subject": setting.get("subject"), kind: setting[kind] if kind == "mode" else _setting_body(setting, kind)}
            for setting, kind in chunk])
        if results is None:
            return chunk
        with lock:
            for (setting, kind), result in zip(chunk, results):
                if "error_code" in result:
                    summary.failed.append({"subject": setting.get("subject"), "error_code": result.get("error_code"),
                                           "message": f"{kind}: {result.get('message', '')}"})
                else:
                    summary.settings += 1
        return []

    def apply_one(item: tuple[dict[str, Any], str]) -> None:
        setting, kind = item
        subject = setting.get("subject")
        try:
            transport.request("PUT", f"/{kind}" + ("" if subject is None else f"/{q(subject)}"),
                              body=_setting_body(setting, kind))
        except SchemaRegistryError as exc:
            with lock:
                summary.failed.append({"subject": subject, "error_code": exc.error_code,
                                       "message": f"{kind}: {exc.error_message}"})
            return
        with lock:
            summary.settings += 1

    for kind in ("config", "mode"):
        todo = [(setting, kind) for setting in settings if setting.get(kind) is not None
                and not (kind == "mode" and setting.get("subject") is None)]
        chunks = [todo[i:i + _BULK] for i in range(0, len(todo), _BULK)]
        rest = [item for left in pool.map(apply_many, chunks) for item in left]
        list(pool.map(apply_one, rest))


def _setting_body(setting: dict[str, Any], kind: str) -> dict[str, Any]:
    """The `PUT /config` or `PUT /mode` body of one exported setting."""
    if kind == "mode":
        return {"mode": setting["mode"]}
    return {k: v for k, v in setting["config"].items() if v is not None}


def _print_import(out: Output, summary: ImportSummary, target: str) -> int:
    data = {"target": target, **vars(summary)}
    out.table(["imported", "count"], [("schemas in export", summary.schemas), ("imported", summary.imported),
                                      ("already there", summary.skipped), ("soft-deleted", summary.soft_deleted),
                                      ("settings", summary.settings), ("failed", len(summary.failed)),
                                      ("global mode after", summary.mode_after or "unchanged"),
                                      ("seconds", f"{summary.seconds:.1f}")], data=data)
    if (summary.failed or summary.interrupted) and not out.as_json:
        for failure in summary.failed[:20]:
            where = f"{failure.get('subject')} version {failure.get('version', '-')}"
            out.errors.print(f"failed: {where}: {failure.get('error_code', '')} {failure['message']}", markup=False)
        if len(summary.failed) > 20:
            out.errors.print(f"... and {len(summary.failed) - 20} more (--json lists all)")
        why = "was interrupted" if summary.interrupted else "is incomplete"
        out.errors.print(f"the import {why}: run it again to finish (what the target holds already is skipped; "
                         "the settings are applied once every version is in)", markup=False)
    return EXIT_OK if not (summary.failed or summary.interrupted) else EXIT_ERROR


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the main thread, as Ctrl-C does: an import
    stopped by `kill`, a supervisor or a CI timeout puts the target's mode back first."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def import_command(args: argparse.Namespace, out: Output, transport: Transport) -> int:
    with open_export(Path(args.source)) as opener:
        manifest, schemas, settings = read_export(opener)
    with terminate_as_interrupt(), _progress(not (args.no_progress or args.json)) as progress:
        summary = import_into(transport, schemas, settings, prefix=manifest.get("prefix", ""), force=args.force,
                              keep_import_mode=args.keep_import_mode, workers=args.workers, progress=progress,
                              journal=ImportJournal.for_target([node.url for node in transport.nodes]))
    return _print_import(out, summary, transport.nodes[0].url)


def copy_command(args: argparse.Namespace, out: Output, source: Transport, target: Transport) -> int:
    prefix = selection_prefix(args.prefix, args.context)
    with tempfile.TemporaryDirectory(prefix="schema-registry-copy-") as work:
        with terminate_as_interrupt(), _progress(not (args.no_progress or args.json)) as progress:
            export_to(source, Path(work), prefix=prefix, deleted=not args.no_deleted,
                      source=source.nodes[0].url, workers=args.workers,
                      subject_settings=not args.no_subject_settings, progress=progress)
            with open_export(Path(work)) as opener:
                _, schemas, settings = read_export(opener)
            summary = import_into(target, schemas, settings, prefix=prefix, force=args.force,
                                  keep_import_mode=args.keep_import_mode, workers=args.workers,
                                  progress=progress,
                                  journal=ImportJournal.for_target([node.url for node in target.nodes]))
    return _print_import(out, summary, target.nodes[0].url)
