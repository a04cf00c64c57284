"""The SQLite connection at the store's boundary: every error SQLite raises, whether when a
statement runs or when its rows are read, becomes the store's own (``StoreDamaged`` for a
damaged file, ``StoreError`` otherwise), said once, here: a damaged database is one line
naming the file and what to do, never a traceback, in every command that reads it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import StoreDamaged, StoreError


def damaged(path: Path, what: str) -> StoreDamaged:
    """The one message for a damaged database: what SQLite said, what to do, and that the
    file was left as it was."""
    return StoreDamaged(f"{path}: the results database is damaged ({what}); it was left as it is: restore it from "
                        f"a copy, or recover what SQLite can still read with `sqlite3 {path} .recover | sqlite3 "
                        f"recovered.db` and give that file")


# SQLite's result codes of a file it cannot read as a database (sqlite3.Error.sqlite_errorcode)
_DAMAGE_CODES = {getattr(sqlite3, name) for name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") if hasattr(sqlite3, name)}


def _translated(path: Path, exc: sqlite3.Error) -> Exception:
    """SQLite's errors, said once at the store's boundary (``Connection``): a damaged file is
    ``StoreDamaged``, a condition of the file or its folder (locked, read-only, full) a
    ``StoreError`` naming it; a misuse of SQLite (a constraint broken, a closed connection)
    is ksweep's bug and stays what SQLite raised."""
    if isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        return exc
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    if code in _DAMAGE_CODES or "malformed" in text or "not a database" in text:
        out: StoreError = damaged(path, text)
    else:
        out = StoreError(f"{path}: {text}")
    out.sqlite = text  # what SQLite said, for a caller that says it in its own words
    return out


def read_only_uri(path: Path) -> str:
    """SQLite's URI of a database read as it is on disk, nothing written (no -wal or -shm
    file made beside it: its folder may be read-only)."""
    return f"{Path(path).resolve().as_uri()}?mode=ro&immutable=1"


class Cursor:
    """A cursor whose rows, read later, translate SQLite's errors too."""

    def __init__(self, cursor: sqlite3.Cursor, path: Path):
        self._cursor, self._path = cursor, path

    def __iter__(self):
        try:
            yield from self._cursor
        except sqlite3.Error as exc:
            raise _translated(self._path, exc) from None

    def fetchone(self):
        return _calling(self._path, self._cursor.fetchone)

    def fetchall(self):
        return _calling(self._path, self._cursor.fetchall)


def _calling(path: Path, call, *args):
    """``call(*args)``, SQLite's errors translated."""
    try:
        return call(*args)
    except sqlite3.Error as exc:
        raise _translated(path, exc) from None


class Connection:
    """The SQLite connection, with every error of SQLite's translated into the store's
    (``StoreDamaged``, ``StoreError``): a damaged file is one line naming it, never a
    traceback, in every command."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self._conn, self._path = conn, path

    def execute(self, *args) -> Cursor:
        return Cursor(_calling(self._path, self._conn.execute, *args), self._path)

    def executemany(self, *args) -> Cursor:
        return Cursor(_calling(self._path, self._conn.executemany, *args), self._path)

    def executescript(self, script: str) -> None:
        _calling(self._path, self._conn.executescript, script)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def close(self) -> None:
        self._conn.close()


SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_header(path: Path) -> bool:
    """Whether the file starts as an SQLite database does (damaged or not)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False
