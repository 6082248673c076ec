"""The embedded durable log: one SQLite file, the default when no Kafka is configured.

SQLite is in the standard library, transactional and crash-safe (WAL with
synchronous=FULL fsyncs every commit), which is exactly what a single-node log needs.

Compaction happens on append, as Kafka's cleaner would eventually do: a new value
for a key replaces older records of that key. A tombstone keeps the value it
deletes, as Kafka does until `delete.retention.ms` passes, so that a replay still sees
every id that was ever assigned and never hands it out again (DESIGN invariant 3).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time

from store.log import LogBatch, LogConflict, LogUnavailable
from store.records import LogRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS log (
    offset INTEGER PRIMARY KEY,
    key    BLOB NOT NULL,
    value  BLOB
);
CREATE INDEX IF NOT EXISTS log_key ON log(key);
-- Offsets never go back, even when compaction deletes the newest row.
CREATE TABLE IF NOT EXISTS next_offset (value INTEGER NOT NULL);
INSERT INTO next_offset SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM next_offset);
"""

# Another process may append to the same file; readers poll this often for its records.
_POLL_SECONDS = 0.05


class SqliteLog:
    """A `Log` in a SQLite file. Thread-safe; other processes may share the file."""

    concurrent_reads = True  # each thread reads through its own connection / under a lock
    max_record_bytes: int | None = None

    def __init__(self, path: str) -> None:
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        self._path = path
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._appended = threading.Condition()
        self._closed = False
        conn = self._conn()
        conn.executescript(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False,
                                       timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error as exc:
                raise LogUnavailable(f"cannot open the embedded log {self._path}: {exc}") from exc
            self._local.conn = conn
        return conn

    def append(self, key: bytes, value: bytes | None, expected_offset: int | None = None,
               timeout: float | None = None) -> int:
        return self._append([(key, value)], expected_offset)[0]

    def append_many(self, records: list[tuple[bytes, bytes | None]], expected_offset: int,
                    timeout: float | None = None) -> list[int]:
        """All of `records` in one transaction (one fsync), or none (LogConflict)."""
        return self._append(records, expected_offset)

    def _append(self, records: list[tuple[bytes, bytes | None]], expected_offset: int | None) -> list[int]:
        conn = self._conn()
        with self._write_lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    first = int(conn.execute("SELECT value FROM next_offset").fetchone()[0])
                    if expected_offset is not None and expected_offset != first:
                        raise LogConflict(f"log end is {first}, not {expected_offset}")
                    offset = first
                    for key, value in records:
                        if value is None:
                            # Drop older tombstones of this key but keep its latest value.
                            conn.execute("DELETE FROM log WHERE key = ? AND value IS NULL", (key,))
                        else:
                            conn.execute("DELETE FROM log WHERE key = ?", (key,))
                        conn.execute("INSERT INTO log(offset, key, value) VALUES (?, ?, ?)",
                                     (offset, key, value))
                        offset += 1
                    conn.execute("UPDATE next_offset SET value = ?", (offset,))
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise LogUnavailable(f"the embedded log refused the write: {exc}") from exc
        with self._appended:
            self._appended.notify_all()
        return list(range(first, offset))

    def read(self, from_offset: int, max_records: int, timeout: float) -> LogBatch:
        deadline = time.monotonic() + timeout
        while True:
            rows, end = self._read_snapshot(from_offset, max_records)
            remaining = deadline - time.monotonic()
            if rows or remaining <= 0 or self._closed:
                records = [LogRecord(o, bytes(k), None if v is None else bytes(v)) for o, k, v in rows]
                if len(records) == max_records and records:
                    return LogBatch(records, records[-1].offset + 1)
                # All that was left: the position is the end, past any compacted tail.
                return LogBatch(records, max(from_offset, end))
            with self._appended:
                self._appended.wait(min(remaining, _POLL_SECONDS))

    def _read_snapshot(self, from_offset: int, max_records: int) -> tuple[list[tuple], int]:
        """Rows from `from_offset` and the end offset, from one consistent snapshot."""
        conn = self._conn()
        try:
            conn.execute("BEGIN")  # WAL: both SELECTs see the same committed state
            try:
                rows = conn.execute(
                    "SELECT offset, key, value FROM log WHERE offset >= ? ORDER BY offset LIMIT ?",
                    (from_offset, max_records)).fetchall()
                end = int(conn.execute("SELECT value FROM next_offset").fetchone()[0])
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise LogUnavailable(f"cannot read the embedded log: {exc}") from exc
        return rows, end

    def end_offset(self, timeout: float | None = None) -> int:
        try:
            return int(self._conn().execute("SELECT value FROM next_offset").fetchone()[0])
        except sqlite3.Error as exc:
            raise LogUnavailable(f"cannot read the embedded log: {exc}") from exc

    def close(self) -> None:
        self._closed = True
        with self._appended:
            self._appended.notify_all()
