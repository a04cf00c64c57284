"""Results in an embedded SQLite database: crash-safe, resumable, readable while a sweep runs.

WAL mode and one transaction per result: a ``kill -9`` at any moment loses at most
the result being written, and the file stays readable. One row per
(variant, shape, config); a config re-evaluated because its build key changed
replaces its row.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable

from ..errors import StoreError
from ..result import Result
from ..status import Status

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
    variant TEXT NOT NULL,
    shape TEXT NOT NULL,
    config TEXT NOT NULL,
    params TEXT NOT NULL,
    derived TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT NOT NULL,
    metrics TEXT NOT NULL,
    regs INTEGER, spills INTEGER, smem INTEGER, kernels TEXT,
    build_argv TEXT, cache_key TEXT, cached INTEGER, phase TEXT,
    gpu_index INTEGER, gpu_name TEXT, gpu_uuid TEXT, driver TEXT,
    build_seconds REAL, run_seconds REAL, started REAL, finished REAL,
    UNIQUE (variant, shape, config)
);
"""

_COLUMNS = (
    "variant", "shape", "config", "params", "derived", "status", "message", "metrics", "regs", "spills",
    "smem", "kernels", "build_argv", "cache_key", "cached", "phase", "gpu_index", "gpu_name", "gpu_uuid",
    "driver", "build_seconds", "run_seconds", "started", "finished",
)


def _dumps(v: Any) -> str:
    return json.dumps(v, sort_keys=False, default=str)


class Store:
    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no such results database")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a ksweep results database ({exc})") from None
        if self.get_meta("schema") is None:
            self.set_meta("schema", SCHEMA_VERSION)

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- meta -----------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, _dumps(value)))

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
            r.started, r.finished if r.finished is not None else time.time(),
        )
        marks = ", ".join("?" * len(_COLUMNS))
        self.db.execute(f"INSERT OR REPLACE INTO results ({', '.join(_COLUMNS)}) VALUES ({marks})", row)

    def get(self, variant: str, shape: str, config: str) -> Result | None:
        cur = self.db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM results WHERE variant = ? AND shape = ? AND config = ?",
            (variant, shape, config),
        )
        row = cur.fetchone()
        return _to_result(row) if row else None

    def results(self, variant: str | None = None, shape: str | None = None) -> list[Result]:
        where, args = [], []
        if variant is not None:
            where.append("variant = ?")
            args.append(variant)
        if shape is not None:
            where.append("shape = ?")
            args.append(shape)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM results"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id"
        return [_to_result(row) for row in self.db.execute(sql, args)]

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


def _to_result(row) -> Result:
    d = dict(zip(_COLUMNS, row))
    return Result(
        variant=d["variant"], shape=d["shape"], params=json.loads(d["params"]),
        derived=json.loads(d["derived"]), status=Status(d["status"]), message=d["message"],
        metrics=json.loads(d["metrics"]), regs=d["regs"], spills=d["spills"], smem=d["smem"],
        kernels=tuple(json.loads(d["kernels"] or "[]")), build_argv=tuple(json.loads(d["build_argv"] or "[]")),
        cache_key=d["cache_key"], cached=bool(d["cached"]), phase=d["phase"], gpu_index=d["gpu_index"],
        gpu_name=d["gpu_name"], gpu_uuid=d["gpu_uuid"], driver=d["driver"],
        build_seconds=d["build_seconds"], run_seconds=d["run_seconds"], started=d["started"],
        finished=d["finished"],
    )
