"""Results in an embedded SQLite database: crash-safe, resumable, readable while a sweep runs.

WAL mode and one transaction per result: a ``kill -9`` at any moment loses at most
the result being written, and the file stays readable. ``results`` holds the current row
per (variant, shape, config): a config re-evaluated because its result key changed
replaces its row there; ``history`` keeps every evaluated result, append-only, with the
source revision it was measured on (``build/revision.py``). The files a result's build read (``deps``) are kept once per distinct
set in ``depsets``.

One sweep writes a database at a time: ``lock()`` takes an exclusive ``flock`` on
``<db>.lock`` (released by the kernel when the process dies, even on ``kill -9``) and
writes the holder's PID into it, so a second sweep is refused with that PID. Readers
(reports) take no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import StoreDamaged, StoreError, StoreInUse
from .connection import Connection, damaged, read_only_uri, sqlite_header

if TYPE_CHECKING:  # the spec's records load the expression language and numpy: a reader of results needs neither
    from ..spec.model import Objective
from ..result import Hardening, Measurement, Result
from ..status import Status
from ..workspace import workspace

from .schema import _ADDED_COLUMNS, _ADDED_HISTORY_COLUMNS, _COLUMNS, _HARDENING, _MARKED, _SCHEMA, _SUPERSEDED, \
    SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "Store"]


def _dumps(v: Any) -> str:
    return json.dumps(v, sort_keys=False, default=str)


class Store:
    """A sweep's results database. The contract every caller relies on:

    - **One writer.** Only a sweep holding ``lock()`` writes results, measurements and marks
      (``ksweep profile`` adds profiles, ``ksweep.kt`` two meta keys, both after the sweep).
      A second sweep is refused (``StoreInUse``).
    - **Readers in a snapshot.** A reader that needs several tables to agree reads them in
      ``snapshot()`` (one transaction: a sweep writing meanwhile is seen before or after,
      whole); ``store/standings.py`` does, and is where every reader gets "best".
    - **A finished result is never changed**, except its verdict (``set_verdict``: the
      status, message and verified flag, when the reference it was judged against changed);
      measuring a config again replaces its current row and appends to the history.
    - **The meta keys, and who writes each**: ``schema`` (the store); ``spec``, ``spec_name``,
      ``objective`` and ``objectives`` (the sweep, ``set_objectives``); ``params:V:S``,
      ``window:V:S`` and ``reference:V:S`` (the sweep, per variant V and shape S); ``sizes:S`` (the
      sweep, per shape S: its ``[shapes.S]`` defines and run arguments, ``set_shape_sizes``);
      ``default:V:S`` and ``confirming:V:S`` (the confirmation: its baseline config, and the
      plan it owes while it runs: ``store/owed.py``); ``kt_problem_size`` and
      ``kt_kernel_name`` (``ksweep.kt``). Readers use the typed accessors (``objective()``,
      ``objectives()``, ``default_configs()``, ``param_orders()``, ``shape_sizes()``).
    """

    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path)
        self.revision: str | None = None  # the source revision the results put now were measured on
        self.migrated: str | None = None  # what opening it changed (an older schema), for a message
        self._lock_fd: int | None = None
        self._depsets: set[str] = set()
        self._select = ", ".join(_COLUMNS)  # what a SELECT of a result names (an older file read as it is: less)
        if self.path.is_dir():  # a reader: the databases it holds; a writer (run --db FOLDER): a new name in it
            found = [] if create else \
                sorted(str(p) for p in (*self.path.glob("*.db"), *self.path.glob(".ksweep/*.db")))[:3]
            example = " or ".join(found) if found else str(self.path / "results.db") if create else ""
            raise StoreError(f"{self.path} is a directory, not a results database: give a database file"
                             + (f", e.g. {example}" if example else ""))
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no such results database")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create its folder ({exc.strerror or exc}): "
                             f"choose another --db") from None
        if create and not os.access(self.path.parent, os.W_OK):
            raise StoreError(f"{self.path}: the folder {self.path.parent} is not writable: choose another --db")
        if create and self.path.exists() and not os.access(self.path, os.W_OK):
            raise StoreError(f"{self.path}: the file is not writable: choose another --db")
        # a reader of a database it cannot write (a read-only file, or a folder where SQLite
        # cannot make its -wal and -shm files) reads it as it is on disk, writing nothing
        self.read_only = not create and not (os.access(self.path.parent, os.W_OK | os.X_OK)
                                             and os.access(self.path, os.W_OK))
        try:
            fresh = self._open(create)
        except StoreError:
            if hasattr(self, "db"):
                self.db.close()
            raise
        self._check_schema(fresh)

    def _open(self, create: bool) -> bool:
        """Connect, refuse another program's file, and make the tables; whether the file was new."""
        try:
            if self.read_only:
                self.db = Connection(sqlite3.connect(read_only_uri(self.path), uri=True, isolation_level=None),
                                     self.path)
                self._refuse_foreign(create)
                return False
            self.db = Connection(sqlite3.connect(str(self.path), timeout=30, isolation_level=None), self.path)
            self._refuse_foreign(create)  # before anything is written to the file
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            fresh = not self._has_table("results")
            self.db.executescript(f"BEGIN;{_SCHEMA}COMMIT;")  # every table or none (kill -9)
            return fresh
        except StoreDamaged as exc:
            if self.path.suffix == ".toml":  # `ksweep history sweep.toml`: the spec, not its results
                db = workspace(self.path.parent) / f"{self.path.stem}.db"
                raise StoreError(f"{self.path}: a spec, not a results database: a sweep of it keeps its "
                                 f"results in {db} (unless it ran with --db)") from None
            if not sqlite_header(self.path):
                raise StoreError(f"{self.path}: not a ksweep results database ({exc.sqlite})") from None
            raise
        except StoreError as exc:
            if getattr(exc, "sqlite", None) is None:  # the store's own refusal, said already
                raise
            raise StoreError(f"{self.path}: cannot open it ({exc.sqlite}): check that it is a writable file, "
                             f"or choose another --db") from None

    def _refuse_foreign(self, create: bool) -> None:
        """Another program's SQLite file (its own tables, not ksweep's) is never written to; a
        reader is also refused a file that holds no tables (an empty one): it has no results."""
        tables = {row[0] for row in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
        if tables and not {"meta", "results"} <= tables:
            self.db.close()
            raise StoreError(f"{self.path}: not a ksweep results database (it holds other tables: "
                             f"{', '.join(sorted(tables))}): choose another --db")
        if not tables and not create:
            self.db.close()
            raise StoreError(f"{self.path}: not a ksweep results database (it holds no tables)")

    def _has_table(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                               (name,)).fetchone() is not None

    def _check_schema(self, fresh: bool) -> None:
        version = self.get_meta("schema")
        if fresh or version is None:
            self.set_meta("schema", SCHEMA_VERSION)
            return
        if str(version) == SCHEMA_VERSION:
            return
        if str(version) == "6" and self.read_only:  # read as it is: its rows have no code, as if NULL
            self._select = ", ".join(c if c not in ("code", "same_as") else f"NULL AS {c}" for c in _COLUMNS)
            return
        if str(version) in ("1", "2", "3", "4", "5") and self.read_only:
            raise StoreError(f"{self.path}: written by an older ksweep (schema {version}); this one upgrades it "
                             f"when it opens it, which it cannot do here (read-only): open a copy of it in a "
                             f"folder you can write")
        if str(version) in ("1", "2", "3", "4", "5", "6"):
            for table, added in (("results", _ADDED_COLUMNS), ("history", _ADDED_HISTORY_COLUMNS)):
                columns = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
                for column in added:
                    if column.split()[0] not in columns:
                        self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            if str(version) != "6":  # the history starts with the results it had (their revision unknown)
                cols = ", ".join(_COLUMNS)
                self.db.execute(f"INSERT INTO history ({cols}) SELECT {cols} FROM results WHERE status != ? "
                                f"ORDER BY id", (Status.PRUNED.value,))
            self.set_meta("schema", SCHEMA_VERSION)
            self.migrated = (f"{self.path}: migrated from schema {version} to {SCHEMA_VERSION}: " +
                             ("every result is now kept with its source revision (ksweep history)" if str(version) != "6"
                              else "results now keep the digest of their program"))
            print(f"ksweep: {self.migrated}", file=sys.stderr)
            return
        raise StoreError(f"{self.path}: written by a newer ksweep (schema {version}, this one reads "
                         f"{SCHEMA_VERSION}): upgrade ksweep, or choose another --db")

    def check_integrity(self) -> None:
        """SQLite's quick check of every page (a sweep does it before it writes, so that it never
        resumes on a damaged file); StoreDamaged naming what it found."""
        rows = [row[0] for row in self.db.execute("PRAGMA quick_check(5)")]
        if rows != ["ok"]:
            raise damaged(self.path, "; ".join(map(str, rows[:3])))

    def lock(self) -> None:
        """Become the only sweep writing this database; raises StoreInUse naming the holder."""
        real = self.path.resolve()  # the database's own name: a symlink to it takes the same lock
        lock_path = real.with_name(real.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            finally:
                os.close(fd)
            raise StoreInUse(f"{self.path} is in use by another ksweep run (pid {holder}): wait for it to "
                             f"finish, or give this run another --db") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            try:
                os.ftruncate(self._lock_fd, 0)
            finally:
                os.close(self._lock_fd)  # closing the descriptor releases the flock
                self._lock_fd = None

    def close(self) -> None:
        self.unlock()
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- meta -----------------------------------------------------------------------
    @contextlib.contextmanager
    def snapshot(self):
        """Reads inside one transaction: a sweep writing meanwhile is seen before or after, whole
        (inside a snapshot already open, that one)."""
        if self.db.in_transaction:
            yield self
            return
        self.db.execute("BEGIN")
        try:
            yield self
        finally:
            self.db.execute("COMMIT")

    def objective(self) -> Objective:
        """What the sweep minimised or maximised (the meta key ``objective``, written by the
        sweep: ``set_objectives``); ms, min for a database that has none yet."""
        from ..spec.model import Objective

        stored = self.get_meta("objective")
        if not isinstance(stored, dict) or "metric" not in stored:
            return Objective()
        return Objective(str(stored["metric"]), str(stored.get("direction", "min")))

    def objectives(self) -> tuple[Objective, ...]:
        """Every objective of the sweep (several: a Pareto front), the first guiding the search."""
        from ..spec.model import Objective

        stored = self.get_meta("objectives") or ()
        return tuple(Objective(str(o["metric"]), str(o.get("direction", "min"))) for o in stored) \
            or (self.objective(),)

    def set_objectives(self, objectives) -> None:
        """The sweep's objectives, the first of them the one "best" is judged by."""
        objectives = tuple(objectives)
        self.set_meta("objective", {"metric": objectives[0].metric, "direction": objectives[0].direction})
        self.set_meta("objectives", [{"metric": o.metric, "direction": o.direction} for o in objectives])

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, _dumps(value)))

    def delete_meta(self, key: str) -> None:
        self.db.execute("DELETE FROM meta WHERE key = ?", (key,))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    # -- results --------------------------------------------------------------------
    def put(self, r: Result) -> None:
        from ..job import config_id

        row = (
            r.variant, r.shape, config_id(r.params), _dumps(dict(r.params)), _dumps(dict(r.derived)),
            r.status.value, r.message, _dumps(dict(r.metrics)), r.regs, r.spills, r.smem,
            _dumps(list(r.kernels)), _dumps(list(r.build_argv)), r.cache_key, int(r.cached), r.phase,
            r.gpu_index, r.gpu_name, r.gpu_uuid, r.driver, r.build_seconds, r.run_seconds,
            r.started, r.finished if r.finished is not None else time.time(), self._depset(r.deps),
            int(r.verified), _dumps(dict(r.gpu_state)) if r.gpu_state else None,
            r.revision if r.revision is not None else self.revision, r.code, r.same_as,
        )
        marks = ", ".join("?" * len(_COLUMNS))
        # the current row of the config and, for an evaluated one, a row of the history, at once
        with self._atomic():
            self.db.execute(f"INSERT OR REPLACE INTO results ({', '.join(_COLUMNS)}) VALUES ({marks})", row)
            if self._has_table("superseded"):  # measured now, it stands for the experiment as it is
                self.db.execute("DELETE FROM superseded WHERE variant = ? AND shape = ? AND config = ?", row[:3])
            if r.status is not Status.PRUNED:
                self.db.execute(f"INSERT INTO history ({', '.join(_COLUMNS)}) VALUES ({marks})", row)

    @contextlib.contextmanager
    def _atomic(self):
        """The statements inside apply together or not at all (a savepoint: it nests in a
        transaction the caller may have open)."""
        self.db.execute("SAVEPOINT atomic")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK TO atomic")
            self.db.execute("RELEASE atomic")
            raise
        self.db.execute("RELEASE atomic")

    def set_verdict(self, r: Result, status: Status, message: str, verified: bool) -> None:
        """Judge a stored result again (its check against another reference): its status,
        message and verified flag change in place, in ``results`` and in its history row; it
        is no new evaluation (no history row, its place in the store's order kept)."""
        from ..job import config_id

        key = (r.variant, r.shape, config_id(r.params))
        with self._atomic():
            self.db.execute("UPDATE results SET status = ?, message = ?, verified = ? "
                            "WHERE variant = ? AND shape = ? AND config = ?",
                            (status.value, message, int(verified), *key))
            if r.finished is not None:
                self.db.execute("UPDATE history SET status = ?, message = ?, verified = ? "
                                "WHERE variant = ? AND shape = ? AND config = ? AND finished = ?",
                                (status.value, message, int(verified), *key, r.finished))

    def _depset(self, deps) -> str | None:
        if not deps:
            return None
        files = json.dumps([list(d) for d in deps])
        key = hashlib.sha256(files.encode()).hexdigest()[:24]
        if key not in self._depsets:
            self.db.execute("INSERT OR IGNORE INTO depsets (id, files) VALUES (?, ?)", (key, files))
            self._depsets.add(key)
        return key

    def _deps(self, key: str | None) -> tuple:
        if not key:
            return ()
        row = self.db.execute("SELECT files FROM depsets WHERE id = ?", (key,)).fetchone()
        return tuple(tuple(d) for d in json.loads(row[0])) if row else ()

    def get(self, variant: str, shape: str, config: str) -> Result | None:
        cur = self.db.execute(
            f"SELECT {self._select} FROM results WHERE variant = ? AND shape = ? AND config = ?",
            (variant, shape, config),
        )
        row = cur.fetchone()
        return self._to_result(row) if row else None

    def evaluated(self, variant: str, shape: str) -> list[Result]:
        """Every stored result of one shape × variant that is not a pruned config."""
        cur = self.db.execute(f"SELECT {self._select} FROM results WHERE variant = ? AND shape = ? "
                              f"AND status != ? ORDER BY id", (variant, shape, Status.PRUNED.value))
        return [self._to_result(row) for row in cur]

    def default_configs(self) -> dict[tuple[str, ...], str]:
        """(variant, shape) -> the config id of the default config, as the confirmation kept it."""
        return {tuple(k.split(":", 2)[1:]): v for k, v in self.meta_items("default:").items()}

    def param_orders(self) -> dict[tuple[str, ...], list[str]]:
        """The parameter names of each (variant, shape) in the spec's order, as the sweep kept them."""
        return {tuple(k.split(":")[1:]): v for k, v in self.meta_items("params:").items()}

    def set_shape_sizes(self, shape: str, defines, args) -> None:
        """A shape's sizes as its spec gives them: its defines (name -> value) and its run
        arguments, in order (a meta key: a database of an older ksweep has none, and opens)."""
        self.set_meta(f"sizes:{shape}", {"defines": dict(defines), "args": [str(a) for a in args]})

    def shape_sizes(self) -> dict[str, dict]:
        """shape -> {"defines": {name: value}, "args": [text, ...]} of each shape a sweep kept
        the sizes of (none for shapes swept before ksweep kept them)."""
        out = {}
        for key, value in self.meta_items("sizes:").items():
            if isinstance(value, dict):
                out[key.split(":", 1)[1]] = {"defines": dict(value.get("defines") or {}),
                                             "args": [str(a) for a in value.get("args") or ()]}
        return out

    def meta_items(self, prefix: str = "") -> dict[str, Any]:
        """Every meta entry whose key starts with ``prefix``."""
        rows = self.db.execute("SELECT key, value FROM meta WHERE key LIKE ? ESCAPE '\\'",
                               (prefix.replace("%", "\\%").replace("_", "\\_") + "%",)).fetchall()
        return {k: json.loads(v) for k, v in rows}

    def results(self, variant: str | None = None, shape: str | None = None,
                superseded: bool = False) -> list[Result]:
        """The current row of each config, oldest first; without ``superseded``, not those a
        later sweep found measured on another source or spec (``supersede``)."""
        if not superseded and self._has_table("superseded"):
            return self._results(variant, shape, "NOT " + _MARKED)
        return self._results(variant, shape)

    def _results(self, variant: str | None, shape: str | None, condition: str | None = None) -> list[Result]:
        clause, args = _where(variant, shape)
        if condition:
            clause += (" AND " if clause else " WHERE ") + condition
        sql = f"SELECT {self._select} FROM results" + clause + " ORDER BY id"
        return [self._to_result(row) for row in self.db.execute(sql, args)]

    # -- results of another source or spec --------------------------------------------------
    def supersede(self, variant: str, shape: str, stale: Iterable[str], current: Iterable[str]) -> None:
        """Mark the ``stale`` configs of one shape × variant as superseded (their stored result
        was measured on a source or spec that is no longer the experiment's: the sweep judges
        it, by the result key) and unmark the ``current`` ones; any other config keeps what it
        had. Reports leave superseded results out; the history keeps them. A config measured
        again (``put``) loses the mark."""
        stale, current = list(stale), list(current)
        if not stale and not self._has_table("superseded"):
            return
        self.db.execute("BEGIN")
        try:
            self.db.execute(_SUPERSEDED)
            self.db.executemany("DELETE FROM superseded WHERE variant = ? AND shape = ? AND config = ?",
                                [(variant, shape, c) for c in current])
            self.db.executemany("INSERT OR IGNORE INTO superseded (variant, shape, config) VALUES (?, ?, ?)",
                                [(variant, shape, c) for c in stale])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def superseded_results(self, variant: str | None = None, shape: str | None = None) -> list[Result]:
        """The stored results marked superseded, oldest first."""
        return self._results(variant, shape, _MARKED) if self._has_table("superseded") else []

    def superseded(self, variant: str | None = None, shape: str | None = None) -> set[tuple[str, str, str]]:
        """(variant, shape, config id) of every superseded result that is still stored (its
        keys only: no row is read whole)."""
        if not self._has_table("superseded"):
            return set()
        clause, args = _where(variant, shape)
        clause += (" AND " if clause else " WHERE ") + _MARKED
        return {tuple(row) for row in self.db.execute(f"SELECT variant, shape, config FROM results{clause}", args)}

    def names(self, what: str) -> list[str]:
        """The shapes (``what="shape"``) or variants (``"variant"``) the database has results of."""
        if what not in ("shape", "variant"):
            raise ValueError(what)
        sql = f"SELECT {what} FROM results UNION SELECT {what} FROM history ORDER BY 1"
        return [row[0] for row in self.db.execute(sql)]

    def history(self, variant: str | None = None, shape: str | None = None) -> list[Result]:
        """Every evaluated result ever stored (append-only), oldest first; ``revision`` says
        which source revision it was measured on (None: stored before schema 6)."""
        clause, args = _where(variant, shape)
        sql = f"SELECT {self._select} FROM history" + clause
        return [self._to_result(row) for row in self.db.execute(sql + " ORDER BY id", args)]

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def put_many(self, results: Iterable[Result]) -> None:
        self.db.execute("BEGIN")
        try:
            for r in results:
                self.put(r)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise


    # -- confirmation runs -------------------------------------------------------------
    def put_measurement(self, m: Measurement) -> None:
        """Store one confirmation run (its own transaction: a kill loses no finished one)."""
        from ..job import config_id

        self.db.execute(
            "INSERT OR REPLACE INTO measurements (variant, shape, config, params, result_key, round, status, value, "
            "message, metrics, gpu_name, gpu_uuid, gpu_state, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (m.variant, m.shape, config_id(m.params), _dumps(dict(m.params)), m.result_key, m.round,
             m.status.value, m.value, m.message, _dumps(dict(m.metrics)), m.gpu_name, m.gpu_uuid,
             _dumps(dict(m.gpu_state)) if m.gpu_state else None,
             m.finished if m.finished is not None else time.time()))

    def measurements(self, variant: str | None = None, shape: str | None = None) -> list[Measurement]:
        """Confirmation runs, in the order they were stored."""
        clause, args = _where(variant, shape)
        sql = ("SELECT variant, shape, params, result_key, round, status, value, message, metrics, gpu_name, "
               "gpu_uuid, gpu_state, finished FROM measurements") + clause
        out = []
        for row in self.db.execute(sql + " ORDER BY id", args):
            (variant_, shape_, params, key, round_, status, value, message, metrics, gpu_name, gpu_uuid,
             gpu_state, finished) = row
            out.append(Measurement(variant_, shape_, json.loads(params), key, round_, Status(status), value, message,
                                   json.loads(metrics), gpu_name, gpu_uuid,
                                   json.loads(gpu_state) if gpu_state else {}, finished))
        return out

    # -- Nsight Compute profiles (ksweep profile) -------------------------------------------
    def put_profile(self, variant: str, shape: str, params, result_key: str | None, metric_set: str,
                    launches: list[dict], tool: str = "", command: Iterable[str] = (), gpu_name: str | None = None
                    ) -> None:
        """Store the profiled launches of one config (replacing its earlier profile with the same set)."""
        from ..job import config_id

        self.db.execute(
            "INSERT OR REPLACE INTO profiles (variant, shape, config, result_key, metric_set, launches, tool, command, "
            "gpu_name, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (variant, shape, config_id(params), result_key, metric_set, _dumps(launches), tool,
             _dumps(list(command)), gpu_name, time.time()))

    def profiles(self, variant: str | None = None, shape: str | None = None) -> list[dict]:
        """Stored profiles: variant, shape, params, result_key, metric_set, launches, tool, command, gpu_name,
        finished; newest last."""
        clause, args = _where(variant, shape)
        sql = ("SELECT variant, shape, config, result_key, metric_set, launches, tool, command, gpu_name, finished "
               "FROM profiles") + clause
        out = []
        for row in self.db.execute(sql + " ORDER BY id", args):
            v, sh, config, key, mset, launches, tool, command, gpu, finished = row
            out.append({"variant": v, "shape": sh, "params": json.loads(config), "result_key": key,
                        "metric_set": mset, "launches": json.loads(launches), "tool": tool,
                        "command": json.loads(command or "[]"), "gpu_name": gpu, "finished": finished})
        return out

    # -- hardening (sweep/hardening.py) -----------------------------------------------------
    def put_hardening(self, h: Hardening) -> None:
        """Store what the hardening of one config found (replacing the record of its kind for the
        same result key); the table is made by the first record."""
        from ..job import config_id

        with self._atomic():
            self.db.execute(_HARDENING)
            self.db.execute(
                "INSERT OR REPLACE INTO hardening (variant, shape, config, params, result_key, kind, verdict, detail, "
                "tools, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (h.variant, h.shape, config_id(h.params), _dumps(dict(h.params)), h.result_key, h.kind, h.verdict,
                 h.detail, _dumps(dict(h.tools)), h.finished if h.finished is not None else time.time()))

    def hardenings(self, variant: str | None = None, shape: str | None = None) -> list[Hardening]:
        """What the hardening found, in the order it was stored ([] for a database never hardened)."""
        if not self._has_table("hardening"):
            return []
        clause, args = _where(variant, shape)
        sql = ("SELECT variant, shape, params, result_key, kind, verdict, detail, tools, finished FROM hardening"
               + clause + " ORDER BY id")
        return [Hardening(v, sh, json.loads(p), key, kind, verdict, detail, json.loads(tools), finished)
                for v, sh, p, key, kind, verdict, detail, tools, finished in self.db.execute(sql, args)]

    def result_id(self, variant: str, shape: str, config: str) -> int | None:
        row = self.db.execute("SELECT id FROM results WHERE variant = ? AND shape = ? AND config = ?",
                              (variant, shape, config)).fetchone()
        return row[0] if row else None

    def get_by_id(self, rowid: int) -> Result | None:
        """The result of that id; None for an id no result has (one beyond SQLite's integers too)."""
        if not 0 < rowid < 2 ** 63:
            return None
        row = self.db.execute(f"SELECT {self._select} FROM results WHERE id = ?", (rowid,)).fetchone()
        return self._to_result(row) if row else None

    def _to_result(self, row) -> Result:
        return _to_result(row, self._deps)


def _where(variant: str | None, shape: str | None) -> tuple[str, list]:
    """`` WHERE variant = ? AND shape = ?`` for the ones given, and their values."""
    given = [(name, value) for name, value in (("variant", variant), ("shape", shape)) if value is not None]
    if not given:
        return "", []
    return " WHERE " + " AND ".join(f"{name} = ?" for name, _ in given), [value for _, value in given]


def _to_result(row, deps=lambda key: ()) -> Result:
    d = dict(zip(_COLUMNS, row))
    return Result(
        variant=d["variant"], shape=d["shape"], params=json.loads(d["params"]),
        derived=json.loads(d["derived"]), status=Status(d["status"]), message=d["message"],
        metrics=json.loads(d["metrics"]), regs=d["regs"], spills=d["spills"], smem=d["smem"],
        kernels=tuple(json.loads(d["kernels"] or "[]")), build_argv=tuple(json.loads(d["build_argv"] or "[]")),
        cache_key=d["cache_key"], cached=bool(d["cached"]), phase=d["phase"], gpu_index=d["gpu_index"],
        gpu_name=d["gpu_name"], gpu_uuid=d["gpu_uuid"], driver=d["driver"],
        build_seconds=d["build_seconds"], run_seconds=d["run_seconds"],
        started=d["started"], finished=d["finished"], deps=deps(d["deps"]), verified=bool(d["verified"]),
        gpu_state=json.loads(d["gpu_state"]) if d.get("gpu_state") else {}, revision=d.get("revision"),
        code=d.get("code"), same_as=d.get("same_as"),
    )
