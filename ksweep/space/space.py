"""The constrained parameter space, built fast and held compactly.

Parameters linked by constraints (directly, or through derived values) form *groups*.
Each group's valid rows are built vectorised: the group's parameters are added one at a
time (an outer product with the rows so far) and every constraint is applied as soon as
all the names it reads are bound, so the rows never grow much past the valid ones. Big
intermediate products are processed in chunks. Rows are stored as small integer indices
into each parameter's value list. The space is the Cartesian product of its groups,
combined lazily: ``len`` is the product of the group sizes, and the i-th config is found
by mixed-radix decomposition, so the full product is never materialised.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import ExprError, KsweepError, SpecError
from ..spec.expr import parse
from ..spec.model import Constraint, Derived, Param, SpaceParts, Spec
from ..spec.names import match_arg, resolve_names
from ..spec.pycall import CallClock, PythonTimeout
from ..spec.templates import render_reason

CHUNK_ROWS = 1 << 21  # rows of one intermediate product processed at once


class SpaceTooLarge(KsweepError, OverflowError):
    """len() of a space with more valid configs than an index-sized integer holds."""


@dataclass(frozen=True)
class Verdict:
    """Whether one config is valid; if not, the first constraint it fails and why."""

    ok: bool
    constraint: str | None = None
    reason: str | None = None


class Space:
    """The valid configs of a set of parameters under constraints.

    ``Space({"A": [1, 2, 4], "B": [1, 2]}, ["A * B <= 4"])`` from Python, or
    ``Space.from_spec(spec, shape, variant)`` from a spec. ``space.size`` counts valid configs (an
    exact Python integer, even beyond 2**63, where ``len(space)`` cannot answer),
    iteration yields dicts, ``space[i]`` is the i-th, ``space.sample(n, seed=...)`` draws
    distinct configs.
    """

    def __init__(
        self,
        params: Mapping[str, Sequence[Any]],
        constraints: Iterable[str] = (),
        *,
        derived: Mapping[str, str] | None = None,
        constants: Mapping[str, Any] | None = None,
    ):
        ps = tuple(Param(name=n, values=tuple(v)) for n, v in params.items())
        ds = tuple(Derived(name=n, expr=_parse(e, f"derived.{n}")) for n, e in (derived or {}).items())
        cs = tuple(
            Constraint(name=f"c{i}", expr=_parse(c, f"constraint {i}"), reason=c)
            for i, c in enumerate(constraints)
        )
        self._init(ps, ds, cs, dict(constants or {}), "<space>", count_only=False)

    @classmethod
    def from_spec(cls, spec: Spec, shape: str | None = None, variant: str | None = None) -> "Space":
        """The space of one shape × variant of a spec (by name; None: the first)."""
        return cls.from_record(spec.space_parts(spec.shape(shape), spec.variant(variant)))

    @classmethod
    def from_record(cls, parts: SpaceParts, count_only: bool = False) -> "Space":
        """The space ``parts`` describe; ``count_only``: count the valid configs, keep no rows."""
        return cls.from_parts(parts.params, parts.derived, parts.constraints, parts.fixed, parts.label, count_only)

    @classmethod
    def from_parts(
        cls,
        params: tuple[Param, ...],
        derived: tuple[Derived, ...],
        constraints: tuple[Constraint, ...],
        fixed: Mapping[str, Any],
        label: str = "<spec>",
        count_only: bool = False,
    ) -> "Space":
        self = cls.__new__(cls)
        self._init(params, derived, constraints, dict(fixed), label, count_only)
        return self

    # -- construction -------------------------------------------------------------

    def _init(self, params, derived, constraints, fixed, label, count_only):
        self.params: tuple[Param, ...] = tuple(params)
        self.names: tuple[str, ...] = tuple(p.name for p in self.params)
        self.derived: tuple[Derived, ...] = tuple(derived)
        self.constraints: tuple[Constraint, ...] = tuple(constraints)
        self.fixed: dict[str, Any] = fixed
        self.label = label
        for p in self.params:
            if not p.values:
                raise SpecError(f"parameter '{p.name}' has no values", path=label)
        self._values = [_as_array(p.values) for p in self.params]
        self._value_bounds = [_int_bound(v) for v in self._values]
        self._param_index = {n: i for i, n in enumerate(self.names)}
        self._derived_by_name = {d.name: d for d in self.derived}
        self._deps = self._resolve_dependencies()
        self._derived_chain = _derived_chains(self.derived)
        self._groups = self._make_groups()
        self._rows: list[np.ndarray | None] = []
        self._counts: list[int] = []
        for group, cons in self._groups:
            result = self._build_group(group, cons, count_only)
            if count_only:
                self._rows.append(None)
                self._counts.append(result)
            else:
                rows = _sort_rows(result)
                self._rows.append(rows)
                self._counts.append(len(rows))
        self._size = math.prod(self._counts)
        self._row_tuples: list[list[tuple] | None] = [None] * len(self._groups)
        self._row_sets: list[dict | None] = [None] * len(self._groups)

    def _resolve_dependencies(self) -> dict[str, frozenset[str]]:
        self._derived_deps, deps = resolve_names(
            self.names, self.derived, self.constraints, self.fixed, self.label
        )
        return deps

    def _match_arg(self, arg: str, c: Constraint) -> str:
        return match_arg(arg, [*self.names, *self._derived_by_name, *self.fixed], c, self.label)

    def _make_groups(self) -> list[tuple[list[str], list[Constraint]]]:
        parent = {n: n for n in self.names}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for c in self.constraints:
            deps = sorted(self._deps[c.name], key=self._param_index.__getitem__)
            for other in deps[1:]:
                parent[find(other)] = find(deps[0])
        members: dict[str, list[str]] = {}
        for n in self.names:
            members.setdefault(find(n), []).append(n)
        groups = []
        for root, names in members.items():
            cons = [c for c in self.constraints if self._deps[c.name] and find(next(iter(self._deps[c.name]))) == root]
            groups.append((names, cons))
        # Constraints that read no parameter hold for all configs or for none.
        closed = [c for c in self.constraints if not self._deps[c.name]]
        if closed:
            groups.append(([], closed))
        return groups

    def _order(self, group: list[str], cons: list[Constraint]) -> list[str]:
        """Bind parameters in an order that lets constraints apply early."""
        order: list[str] = []
        left = list(group)
        while left:
            bound = set(order)

            def score(p):
                completes = sum(1 for c in cons if p in self._deps[c.name] and self._deps[c.name] <= bound | {p})
                touches = sum(1 for c in cons if p in self._deps[c.name])
                return (completes, touches, -len(self._values[self._param_index[p]]), -self._param_index[p])

            best = max(left, key=score)
            order.append(best)
            left.remove(best)
        return order

    def _build_group(self, group: list[str], cons: list[Constraint], count_only: bool):
        order = self._order(group, cons)
        due: list[list[Constraint]] = []
        bound: set[str] = set()
        applied: set[str] = set()
        # Constraints apply in spec order over the configs still valid: a constraint is due
        # once its names are bound *and* every earlier constraint of the group is due, so a
        # later one may rely on an earlier one (``X != 0`` before ``Y // X``).
        for p in order:
            bound.add(p)
            now = []
            for c in cons:  # spec order
                if c.name in applied:
                    continue
                if not self._deps[c.name] <= bound:
                    break
                now.append(c)
            applied.update(c.name for c in now)
            due.append(now)
        if not order:  # constraints over constants only
            env = _RowEnv(self, [], {}, 1)
            ok = all(self._check(c, env, 1).all() for c in cons)
            return (1 if ok else 0) if count_only else np.zeros((1 if ok else 0, 0), dtype=np.uint8)
        cols0: dict[str, np.ndarray] = {}
        result = self._grow(order, due, 0, cols0, 1, count_only)
        if count_only:
            return result
        # columns back into spec order
        return np.stack([result[n] for n in group], axis=1) if len(result[group[0]]) else np.zeros(
            (0, len(group)), dtype=np.int32
        )

    def _grow(self, order, due, step, cols, n, count_only):
        if step == len(order):
            return n if count_only else cols
        p = order[step]
        k = len(self._values[self._param_index[p]])
        if n > 1 and n * k > CHUNK_ROWS:
            per = max(1, CHUNK_ROWS // k)
            parts = []
            for start in range(0, n, per):
                sub = {name: col[start : start + per] for name, col in cols.items()}
                parts.append(self._grow(order, due, step, sub, min(per, n - start), count_only))
            if count_only:
                return sum(parts)
            return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
        idx_dtype = np.uint8 if k <= 256 else (np.uint16 if k <= 65536 else np.int32)
        new = {name: np.repeat(col, k) for name, col in cols.items()}
        new[p] = np.tile(np.arange(k, dtype=idx_dtype), n)
        m = n * k
        env = None
        for c in due[step]:  # each on the rows every earlier constraint kept
            if m == 0:
                break
            if env is None:
                env = _RowEnv(self, order[: step + 1], new, m)
            ok = self._check(c, env, m)
            if not ok.all():
                new = {name: col[ok] for name, col in new.items()}
                m = int(ok.sum())
                env = None  # derived values were for the old rows
        env = ok = None  # free the step's temporaries before recursing: peak memory
        if m == 0:
            return 0 if count_only else {name: col[:0] for name, col in new.items()} | {
                q: np.zeros(0, dtype=np.uint8) for q in order[step + 1 :]
            }
        return self._grow(order, due, step + 1, new, m, count_only)

    def _check(self, c: Constraint, env: "_RowEnv", m: int, mask: np.ndarray | None = None) -> np.ndarray:
        """Evaluate a constraint on every row of env (rows already failed may be skipped)."""
        where = f"constraint '{c.name}'"
        try:
            if c.expr is not None:
                out = c.expr.evaluate_vec(env, m)
                return out.astype(bool) if out.dtype != bool else out
            ok = np.zeros(m, dtype=bool)
            rows = range(m) if mask is None else np.flatnonzero(mask)
            with CallClock() as clock:  # armed once; each call gets the limit
                for r in rows:
                    ok[r] = _call_python(c, self, env.row(int(r)), clock)[0]
            return ok
        except ExprError as exc:
            raise SpecError(str(exc), path=self.label, key=where) from None

    # -- the public face ----------------------------------------------------------

    def __len__(self) -> int:
        if self._size > sys.maxsize:  # len() cannot return it: a clear error instead of Python's
            raise SpaceTooLarge(f"{self.label}: the space has {self._size:.3e} valid configs, more than len() can "
                                f"count (2**63 - 1): use space.size")
        return self._size

    @property
    def size(self) -> int:
        return self._size

    @property
    def raw_size(self) -> int:
        """Number of configs before constraints: the product of the value-list lengths."""
        return math.prod(len(p.values) for p in self.params)

    def _group_tuples(self, g: int) -> list[tuple]:
        if self._row_tuples[g] is None:
            names, _ = self._groups[g]
            rows = self._rows[g]
            if rows is None:
                raise RuntimeError("this space was built for counting only")
            cols = [self._values[self._param_index[n]][rows[:, j]].tolist() for j, n in enumerate(names)]
            self._row_tuples[g] = list(zip(*cols)) if names else [()] * len(rows)
        return self._row_tuples[g]

    def _assemble(self, parts: Sequence[tuple]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for (names, _), part in zip(self._groups, parts):
            values.update(zip(names, part))
        return {n: values[n] for n in self.names}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._size == 0:
            return
        for parts in itertools.product(*(self._group_tuples(g) for g in range(len(self._groups)))):
            yield self._assemble(parts)

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(i)
        parts = [None] * len(self._groups)
        for g in reversed(range(len(self._groups))):
            i, r = divmod(i, self._counts[g])
            parts[g] = self._group_tuples(g)[r]
        return self._assemble(parts)

    def index(self, config: Mapping[str, Any]) -> int:
        """Position of a valid config; ValueError if it is not in the space."""
        i = 0
        for g, (names, _) in enumerate(self._groups):
            if self._row_sets[g] is None:
                self._row_sets[g] = {t: r for r, t in enumerate(self._group_tuples(g))}
            key = tuple(config[n] for n in names)
            r = self._row_sets[g].get(key)
            if r is None:
                raise ValueError(f"{dict(config)} is not a valid config of this space")
            i = i * self._counts[g] + r
        return i

    def outside_values(self, config: Mapping[str, Any]) -> dict[str, tuple]:
        """name -> the parameter's values, for each parameter whose value in ``config`` is not
        one of them (or is missing): such a config is never in the space, whatever the
        constraints say."""
        return {p.name: tuple(p.values) for p in self.params
                if p.name not in config or not any(_same(config[p.name], v) for v in p.values)}

    def __contains__(self, config: Mapping[str, Any]) -> bool:
        try:
            self.index(config)
            return True
        except (ValueError, KeyError):
            return False

    def sample(self, n: int, seed: int | None = None) -> list[dict[str, Any]]:
        """``n`` distinct valid configs drawn uniformly (all of them when n >= len)."""
        rng = random.Random(seed)
        k = min(n, self._size)
        if self._size <= sys.maxsize:
            return [self[i] for i in rng.sample(range(self._size), k)]
        # beyond what range() can sample: draws of exact Python integers, repeats skipped
        drawn: dict[int, None] = {}
        while len(drawn) < k:
            drawn.setdefault(rng.randrange(self._size))
        return [self[i] for i in drawn]

    def _derive_into(self, env: dict, name: str) -> None:
        """Put derived ``name`` and the derived values it reads into ``env``."""
        for d in self._derived_chain[name]:
            if d not in env:
                try:
                    env[d] = self._derived_by_name[d].expr.evaluate(env)
                except ExprError as exc:
                    raise SpecError(str(exc), path=self.label, key=f"derived.{d}") from None

    def derive_known(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The derived values of one config that can be computed (for a pruned config, some
        may not be: ``N // BN`` when BN = 0)."""
        env = dict(self.fixed)
        env.update(config)
        out = {}
        for d in self.derived:
            try:
                self._derive_into(env, d.name)
                out[d.name] = env[d.name]
            except SpecError:
                continue
        return out

    def derive(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The derived values of one config, in spec order."""
        env = dict(self.fixed)
        env.update(config)
        out = {}
        for d in self.derived:
            try:
                env[d.name] = out[d.name] = d.expr.evaluate(env)
            except ExprError as exc:
                raise SpecError(str(exc), path=self.label, key=f"derived.{d.name}") from None
        return out

    def explain(self, config: Mapping[str, Any]) -> Verdict:
        """Check one config against every constraint, in spec order. A derived value is
        computed when a constraint first reads it, so a value that cannot be computed for
        a config an earlier constraint excludes (``N // BN`` after ``BN > 0``) is never asked."""
        env = dict(self.fixed)
        env.update(config)
        for c in self.constraints:
            wanted = c.expr.names if c.expr is not None else self._derived_by_name
            for name in [n for n in self._derived_by_name if n in wanted]:  # spec order
                self._derive_into(env, name)
            if c.expr is not None:
                try:
                    ok, reason = bool(c.expr.evaluate(env)), None
                except ExprError as exc:
                    raise SpecError(str(exc), path=self.label, key=f"constraint '{c.name}'") from None
            else:
                ok, reason = _call_python(c, self, env)
            if not ok:
                return Verdict(False, c.name, reason or format_reason(c, env))
        return Verdict(True)

    @property
    def group_names(self) -> list[list[str]]:
        return [names for names, _ in self._groups if names]


class _RowEnv(Mapping):
    """Lazy name -> array view of the rows under construction."""

    def __init__(self, space: Space, bound: list[str], cols: dict[str, np.ndarray], n: int):
        self.space = space
        self.cols = cols
        self.n = n
        self.cache: dict[str, Any] = {}
        self.int_bounds: dict[str, int | None] = {}  # the evaluator's bounds of |value| per name

    def __getitem__(self, name):
        if name in self.cache:
            return self.cache[name]
        sp = self.space
        if name in self.cols:
            i = sp._param_index[name]
            value = sp._values[i][self.cols[name]]
            self.int_bounds[name] = sp._value_bounds[i]  # the value list's bound holds for its rows
        elif name in sp._derived_by_name:
            # the derived values it reads first, in spec order: no recursion through a long chain
            for earlier in sp._derived_chain[name][:-1]:
                if earlier not in self.cache:
                    self.cache[earlier] = sp._derived_by_name[earlier].expr.evaluate_vec(self, self.n)
            value = sp._derived_by_name[name].expr.evaluate_vec(self, self.n)
        elif name in sp.fixed:
            value = sp.fixed[name]
        else:
            raise KeyError(name)
        self.cache[name] = value
        return value

    def __iter__(self):
        return iter([*self.cols, *self.space._derived_by_name, *self.space.fixed])

    def __len__(self):
        return len(self.cols) + len(self.space._derived_by_name) + len(self.space.fixed)

    def row(self, r: int) -> dict[str, Any]:
        sp = self.space
        env = dict(sp.fixed)
        for name, col in self.cols.items():
            env[name] = sp._values[sp._param_index[name]][col[r]].item()
        for d in sp.derived:
            if sp._derived_deps[d.name] <= self.cols.keys():
                env[d.name] = d.expr.evaluate(env)
        return env


def _call_python(c: Constraint, space: Space, env: Mapping[str, Any],
                 clock: CallClock | None = None) -> tuple[bool, str | None]:
    """Call a Python constraint on one config, under the per-call time limit of ``clock``
    (spec/pycall.py); whatever it does wrong is one ExprError line naming it."""
    if clock is None:
        with CallClock() as clock:
            return _call_python(c, space, env, clock)
    fn = c.function
    who = f"{fn.path.name}:{fn.function}"
    try:
        if fn.takes_config():
            args, kwargs = ((dict(env),), {}) if fn.arg_names() == ("config",) else ((), dict(env))
        else:
            args, kwargs = tuple(env[space._match_arg(a, c)] for a in fn.arg_names()), {}
        clock.start()
        try:
            result = fn.fn(*args, **kwargs)
            if isinstance(result, tuple):
                ok, reason = bool(result[0]), (str(result[1]) if len(result) > 1 else None)
            else:
                ok, reason = bool(result), None
        finally:
            clock.stop()
    except PythonTimeout:
        raise ExprError(f"{who} did not return within {clock.limit:g} s for {_config_text(space, env)}: "
                        "a Python constraint must return quickly (docs/spec.md, \"Limits\")") from None
    except SystemExit as exc:
        raise ExprError(f"{who} called sys.exit({_one_line(repr(exc.code))}) for {_config_text(space, env)}: "
                        "a constraint must return True or False (or (False, reason)), never exit") from None
    except Exception as exc:  # noqa: BLE001 - user code; reported as a spec error
        raise ExprError(f"{who} raised {type(exc).__name__}: {_one_line(str(exc))}") from None
    return ok, (None if ok else reason)


def _config_text(space: Space, env: Mapping[str, Any]) -> str:
    parts = [f"{n}={env[n]!r}" for n in space.names if n in env]
    text = ", ".join(parts[:12]) + (", …" if len(parts) > 12 else "")
    return _one_line(text) or "this configuration"


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def format_reason(c: Constraint, env: Mapping[str, Any]) -> str:
    """Fill a constraint's reason template ("SMEM {SMEM_TOTAL} > 228 KB") for one config:
    plain {NAME} placeholders only (spec/templates.py), never str.format's attribute
    access, indexing or format specs."""
    template = c.reason or (c.expr.source if c.expr is not None else c.name)
    return render_reason(template, env)


def _parse(source: str, where: str):
    try:
        return parse(source)
    except ExprError as exc:
        raise SpecError(str(exc), key=where) from None


def _derived_chains(derived: Sequence[Derived]) -> dict[str, list[str]]:
    """For each derived value, the derived values it reads, directly or not, and itself: in spec order."""
    names = {d.name for d in derived}
    chains: dict[str, list[str]] = {}
    order = {d.name: i for i, d in enumerate(derived)}
    for d in derived:
        needed: set[str] = {d.name}
        for name in d.expr.names:
            if name in names and name in chains:
                needed.update(chains[name])
        chains[d.name] = sorted(needed, key=order.__getitem__)
    return chains


def _int_bound(values: np.ndarray) -> int | None:
    """An upper bound of |v| over an integer value list (None for others): what the
    vectorised evaluator needs to know that int64 arithmetic cannot wrap."""
    if values.dtype.kind == "b":
        return 1
    if values.dtype.kind in "iu" and values.size:
        return max(int(values.max()), -int(values.min()))
    return None


def _same(a: Any, b: Any) -> bool:
    """A config's value is this value of a parameter (``2 == 2.0``; ``True`` is not ``1``)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _as_array(values: tuple) -> np.ndarray:
    kinds = {type(v) for v in values}
    if kinds <= {bool}:
        return np.array(values, dtype=bool)
    if kinds <= {int}:
        if all(-(2**63) <= v < 2**63 for v in values):
            return np.array(values, dtype=np.int64)
        return np.array(values, dtype=object)  # beyond int64: Python integers, exact
    if kinds <= {int, float}:
        return np.array(values, dtype=np.float64)
    if kinds <= {str}:
        return np.array(values, dtype=str)
    return np.array(values, dtype=object)


def _sort_rows(rows: np.ndarray) -> np.ndarray:
    if rows.shape[0] <= 1 or rows.shape[1] == 0:
        return rows
    order = np.lexsort(rows.T[::-1])
    return rows[order]
