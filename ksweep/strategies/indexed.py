"""A space seen by position, with every config as a row of value indices.

Vectorised strategies score many candidate configs at once; they need configs as numbers.
A config becomes a row of value indices (one per parameter, an index into its value list)
and a *position* (``space.index``). Numeric parameters also have *ranks* (the order of
their values, whatever order the spec lists them in), so that "nearest config" means
nearest values.

A space with up to ``FULL_LIMIT`` configs is enumerated once (replayed spaces hand their
rows over directly); a bigger one is searched through samples of positions. A space of
more than 2**63 - 1 configs (``huge``) has positions that no int64 holds: they are exact
Python integers, and arrays of positions have dtype ``object`` (``pos_dtype``); sorting,
``np.unique``, masks and concatenation work on them alike.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .base import INDEX_LIMIT, SearchSpace, space_size

FULL_LIMIT = 200_000  # enumerate spaces up to this many configs
CACHE_LIMIT = 50_000  # rows and lookups of a space not enumerated kept (both ways), then started afresh


class IndexedSpace:
    def __init__(self, space: SearchSpace, full_limit: int = FULL_LIMIT):
        self.space = space
        self.size = space_size(space)
        self.huge = self.size > INDEX_LIMIT
        self.pos_dtype = object if self.huge else np.int64
        self.params = tuple(space.params)
        self.levels = np.array([len(p.values) for p in self.params], dtype=np.int64)
        self._lookup = [_value_lookup(p.values) for p in self.params]
        self._rank = [value_ranks(p.values) for p in self.params]
        rows = getattr(space, "rows", None)
        if rows is None and self.size <= full_limit:
            rows = np.array([self.row(c) for c in _iterate(space)], dtype=np.int32).reshape(self.size, -1)
        self.rows: np.ndarray | None = rows  # row i is the config at position i
        # Only parameters with a choice carry information.
        self._varying = np.flatnonzero(self.levels > 1)
        self._all_features: np.ndarray | None = None
        # A space not enumerated answers through space[i] and space.index, a Python loop over
        # its parameters each: local steps look up the same neighbourhoods again and again.
        self._row_at: dict[int, bytes] = {}
        self._at_row: dict[bytes, int | None] = {}

    @property
    def enumerated(self) -> bool:
        return self.rows is not None

    def positions(self, values) -> np.ndarray:
        """An array of positions (int64, or Python integers in a huge space)."""
        if self.huge:
            out = np.empty(len(values), dtype=object)
            out[:] = [int(v) for v in values]
            return out
        return np.asarray(values, dtype=np.int64).reshape(-1)

    def row(self, config: Mapping[str, Any]) -> np.ndarray:
        return np.array([lk[_key(config[p.name])] for lk, p in zip(self._lookup, self.params)], dtype=np.int32)

    def rows_of(self, positions: np.ndarray) -> np.ndarray:
        if self.rows is not None:
            return self.rows[positions]
        out = np.empty((len(positions), len(self.params)), dtype=np.int32)
        for k, i in enumerate(positions):
            i = int(i)
            key = self._row_at.get(i)
            if key is None:
                row = self.row(self.space[i])
                self._remember(i, row.tobytes())
                out[k] = row
            else:
                out[k] = np.frombuffer(key, dtype=np.int32)
        return out

    def _remember(self, position: int | None, key: bytes) -> None:
        if len(self._at_row) >= CACHE_LIMIT or len(self._row_at) >= CACHE_LIMIT:
            self._at_row.clear()
            self._row_at.clear()
        self._at_row[key] = position
        if position is not None:
            self._row_at[position] = key

    def config(self, position: int) -> dict[str, Any]:
        return self.space[int(position)]

    def position(self, config: Mapping[str, Any]) -> int:
        return self.space.index(config)

    def position_of_row(self, row: np.ndarray) -> int | None:
        """Position of the config with these value indices, or None if it is not valid."""
        key = np.asarray(row, dtype=np.int32).tobytes()
        if key in self._at_row:
            return self._at_row[key]
        config = {p.name: p.values[int(j)] for p, j in zip(self.params, row)}
        try:
            pos = self.space.index(config)
        except (ValueError, KeyError):
            pos = None
        self._remember(pos, key)
        return pos

    @property
    def all_features(self) -> np.ndarray:
        """Features of every config (enumerated spaces only), computed once."""
        if self._all_features is None:
            self._all_features = self.features(self.rows)
        return self._all_features

    def sample_positions(self, rng: np.random.Generator, n: int, exclude: set[int] | np.ndarray) -> np.ndarray:
        """Up to ``n`` distinct random positions not in ``exclude``."""
        if self.rows is not None or self.size <= 4 * n:
            free = np.setdiff1d(np.arange(self.size), np.fromiter(exclude, dtype=np.int64, count=len(exclude)))
            return rng.choice(free, size=min(n, len(free)), replace=False) if len(free) else free
        drawn = np.unique(random_positions(rng, self.size, n))
        return self.positions([i for i in drawn if i not in exclude])

    def nearest(self, row: np.ndarray, exclude: set[int], rng: np.random.Generator) -> int:
        """The valid config closest to ``row`` (L1 distance between value ranks), not excluded.

        Ties are broken at random, so that repeated projections do not pile up on one side."""
        target = self.features(row[None, :])[0]
        if self.rows is not None:
            cand = None
            feats = self.all_features
        else:
            cand = self.sample_positions(rng, 4096, exclude)
            pos = self.position_of_row(row)
            near = [cand] + ([self.neighbours(row)] if pos is None else [self.neighbours(row), self.positions([pos])])
            cand = np.unique(np.concatenate(near).astype(self.pos_dtype))
            cand = cand[[int(i) not in exclude for i in cand]] if len(cand) else cand
            feats = self.features(self.rows_of(cand))
        dist = np.abs(feats - target).sum(axis=1) + rng.random(len(feats)) * 1e-9
        if cand is None and exclude:
            dist[np.fromiter(exclude, dtype=np.int64, count=len(exclude))] = np.inf
        best = int(np.argmin(dist))
        if not np.isfinite(dist[best]):
            raise ValueError("every config of the space is excluded")
        return best if cand is None else int(cand[best])

    def features(self, rows: np.ndarray) -> np.ndarray:
        """Each varying parameter's value rank, scaled to [0, 1]."""
        cols = [self._rank[j][rows[:, j]] / (self.levels[j] - 1) for j in self._varying]
        if not cols:
            return np.zeros((len(rows), 1))
        return np.stack(cols, axis=1)

    def neighbours(self, row: np.ndarray) -> np.ndarray:
        """Positions of valid configs that differ from ``row`` in exactly one parameter.

        With the space enumerated this is one vectorised comparison; otherwise each
        single-parameter change is looked up.
        """
        if self.rows is not None:
            return np.flatnonzero((self.rows != row).sum(axis=1) == 1)
        out = []
        for j in self._varying:
            for v in range(self.levels[j]):
                if v != row[j]:
                    other = row.copy()
                    other[j] = v
                    pos = self.position_of_row(other)
                    if pos is not None:
                        out.append(pos)
        return self.positions(out)

    def ball(self, row: np.ndarray, radius: int, rng: np.random.Generator, expand: int = 64) -> np.ndarray:
        """Positions of valid configs that differ from ``row`` in 1 to ``radius`` parameters.

        Enumerated spaces compare every row at once. Otherwise the ball is grown one
        parameter change at a time from at most ``expand`` configs of the previous ring
        (drawn at random): every lookup goes through ``space.index``."""
        if self.rows is not None:
            d = (self.rows != row).sum(axis=1)
            return np.flatnonzero((d >= 1) & (d <= radius))
        seen: set[int] = set()
        start = self.position_of_row(row)
        if start is not None:
            seen.add(start)
        ring = [row]
        found: list[int] = []
        for _ in range(radius):
            nxt = []
            for r in ring:
                for pos in self.neighbours(r):
                    if int(pos) not in seen:
                        seen.add(int(pos))
                        nxt.append(int(pos))
            found.extend(nxt)
            if len(nxt) > expand:
                nxt = [nxt[int(k)] for k in rng.choice(len(nxt), size=expand, replace=False)]
            ring = list(self.rows_of(self.positions(nxt))) if nxt else []
        return self.positions(found)


def random_positions(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """``n`` uniform draws (with repeats) from ``range(size)``, for a size of any magnitude.

    Up to 2**63 - 1 this is ``rng.integers(size, size=n)``. Above, each draw is an exact
    Python integer made of as many 64-bit words as the size needs, cut to its bit length,
    and drawn again when not below the size (fewer than half the draws), so every position
    is equally likely and the draws are a function of the generator's state."""
    if size <= INDEX_LIMIT:
        return rng.integers(size, size=n)
    bits = (size - 1).bit_length()
    words = -(-bits // 64)
    out: list[int] = []
    while len(out) < n:
        block = rng.integers(0, 2**64 - 1, size=(n - len(out), words), dtype=np.uint64, endpoint=True)
        for row in block:
            v = int.from_bytes(row.astype("<u8").tobytes(), "little") >> (64 * words - bits)
            if v < size:
                out.append(v)
    result = np.empty(len(out), dtype=object)
    result[:] = out
    return result


def _iterate(space):
    try:
        return iter(space)
    except TypeError:
        return (space[i] for i in range(space_size(space)))


def _key(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _value_lookup(values) -> dict:
    return {_key(v): j for j, v in enumerate(values)}


def value_ranks(values) -> np.ndarray:
    """Rank of each value: by magnitude when all are numbers, else their listed order."""
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if not numeric:
        return np.arange(len(values), dtype=np.float64)
    order = np.argsort(np.asarray(values, dtype=np.float64), kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(len(values))
    return ranks
