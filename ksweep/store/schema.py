"""The results database's tables: the schema version, the tables a store makes, a result's
columns, and the columns an older database gets when it is opened (``sqlite.py``)."""

SCHEMA_VERSION = "7"  # 2: results.deps and the depsets table; 3: results.verified;
# 4: results.gpu_state and the measurements table (confirmation runs); 5: the profiles table;
# 6: results.revision and the history table (every result kept); 7: code (the digest of the
# program its build made) and same_as (the config whose run it shares: one program, measured once). The superseded table is made
# by the first sweep that marks a result (``supersede``): a reader never writes to add it, and
# an older ksweep reading the file ranks those rows as it always did

# A result's columns: the current row of each config (results) and every row ever (history).
_RESULT_COLUMNS = """    variant TEXT NOT NULL,
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
    build_seconds REAL, run_seconds REAL, started REAL, finished REAL, deps TEXT, verified INTEGER, gpu_state TEXT,
    revision TEXT, code TEXT, same_as TEXT"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
{result_columns},
    UNIQUE (variant, shape, config)
);
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY,
{result_columns}
);
CREATE INDEX IF NOT EXISTS history_by_target ON history (variant, shape, finished);
CREATE TABLE IF NOT EXISTS depsets (id TEXT PRIMARY KEY, files TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY,
    variant TEXT NOT NULL,
    shape TEXT NOT NULL,
    config TEXT NOT NULL,
    params TEXT NOT NULL,
    result_key TEXT NOT NULL,
    round INTEGER NOT NULL,
    status TEXT NOT NULL,
    value REAL,
    message TEXT NOT NULL,
    metrics TEXT NOT NULL,
    gpu_name TEXT, gpu_uuid TEXT, gpu_state TEXT, finished REAL,
    UNIQUE (variant, shape, config, result_key, round)
);
CREATE TABLE IF NOT EXISTS profiles (
    id INTEGER PRIMARY KEY,
    variant TEXT NOT NULL,
    shape TEXT NOT NULL,
    config TEXT NOT NULL,
    result_key TEXT,
    metric_set TEXT NOT NULL,
    launches TEXT NOT NULL,
    tool TEXT, command TEXT, gpu_name TEXT, finished REAL,
    UNIQUE (variant, shape, config, metric_set)
);
""".replace("{result_columns}", _RESULT_COLUMNS)

_COLUMNS = (
    "variant", "shape", "config", "params", "derived", "status", "message", "metrics", "regs", "spills",
    "smem", "kernels", "build_argv", "cache_key", "cached", "phase", "gpu_index", "gpu_name", "gpu_uuid",
    "driver", "build_seconds", "run_seconds", "started", "finished", "deps", "verified", "gpu_state", "revision",
    "code", "same_as",
)

# Columns added to results since schema 1 (schema 2: deps, 3: verified): an older database gets
# them by ALTER TABLE. Its rows read NULL there: without deps their result keys no longer match,
# so they rerun; and they are not known to be verified.
_ADDED_COLUMNS = ("deps TEXT", "verified INTEGER", "gpu_state TEXT", "revision TEXT", "code TEXT", "same_as TEXT")
# Columns added to history since it was made (schema 6)
_ADDED_HISTORY_COLUMNS = ("code TEXT", "same_as TEXT")

# a row of results that is marked superseded
_MARKED = ("EXISTS (SELECT 1 FROM superseded s WHERE s.variant = results.variant AND s.shape = results.shape "
           "AND s.config = results.config)")

# what the hardening of the leaders found (made by its first record, as superseded: a reader never
# writes, and an older ksweep reading the file ignores it)
_HARDENING = """CREATE TABLE IF NOT EXISTS hardening (
    id INTEGER PRIMARY KEY,
    variant TEXT NOT NULL,
    shape TEXT NOT NULL,
    config TEXT NOT NULL,
    params TEXT NOT NULL,
    result_key TEXT,
    kind TEXT NOT NULL,
    verdict TEXT NOT NULL,
    detail TEXT NOT NULL,
    tools TEXT NOT NULL,
    finished REAL,
    UNIQUE (variant, shape, config, result_key, kind)
)"""

_SUPERSEDED = """CREATE TABLE IF NOT EXISTS superseded (
    variant TEXT NOT NULL,
    shape TEXT NOT NULL,
    config TEXT NOT NULL,
    PRIMARY KEY (variant, shape, config)
)"""
