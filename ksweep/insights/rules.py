"""Failures turned into constraints: for each failure status, the shortest rule over the
knobs and derived values, written in the spec's expression language, that separates the
configs that failed with it from the OK ones.

The words of a rule are *atoms*, ``feature op value``, where a feature is a knob or a
derived value (op ``==``, ``!=``, ``<`` or ``>``), or the product (``A * B``: ``==``, ``<``,
``>``) or ratio (``A / B``: ``<``, ``>``) of two numeric knobs. A *term* is atoms joined by
``and`` (at most ``MAX_ATOMS``); a rule is terms joined by ``or``. An atom of a knob or a
derived value costs 1, of a product or a ratio 2 (it names two knobs): a term's cost is
the sum.

The search is greedy set cover. The term taken is the one covering the most failed
configs not yet covered and no OK config; of equal ones, the cheapest, then the one of
plain knobs. Terms are grown by a beam search (``BEAM`` unfinished terms carried from one
length to the next), so a longer term is taken only when it covers more than every
shorter one. A term must cover at least ``MIN_COVER`` failed configs (one config is no
pattern). Terms are taken until every failed config is covered or none is left that
qualifies. Configs
of other failure statuses count neither way. When exact terms leave failed configs
uncovered, a term may then cover a few OK configs, its exceptions: ``PER_EXCEPTION``
failed configs at least for each OK one, and the terms of all the rules of a table
together cover at most ``OK_BUDGET`` of its OK configs. Each term's counts are
then taken again by evaluating its text with the spec's own evaluator, so that what a
reason says is what ``plan`` will prune.

Thresholds lie between values the configs have: ``A * B > 8`` where 8 is the largest OK
value below the failed ones, so the rule prunes what lies beyond the OK configs; a
fraction is written with the fewest digits that still separates (``A / B < 0.3``). A
knob's atom that covers one of its values is written ``==``, all but one ``!=``; a switch
``FLAG`` or ``not FLAG``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..spec.expr import parse
from ..status import FAILURE_ORDER
from .table import Table

MAX_TERMS = 16  # terms of one rule
MAX_ATOMS = 4  # atoms of one term
MIN_COVER = 2  # failed configs a term must cover
BEAM = 24  # unfinished terms carried from one length to the next
PER_EXCEPTION = 2  # an inexact term covers at least this many failed configs per OK one
OK_BUDGET = 0.005  # the OK configs the inexact terms of a table may cover, as a share of them

_KIND_RANK = {"knob": 0, "derived": 1, "product": 2, "ratio": 3}
_COST = {"knob": 1, "derived": 1, "product": 2, "ratio": 2}
_OPS = {"knob": ("==", "!=", "<", ">"), "derived": ("==", "!=", "<", ">"), "product": ("==", "<", ">"),
        "ratio": ("<", ">")}


@dataclass(frozen=True)
class Feature:
    text: str  # as the expression language writes it
    kind: str  # knob, derived, product, ratio
    levels: tuple  # its distinct values, ascending when numeric
    codes: np.ndarray  # per config, the index of its value in levels
    numeric: bool
    boolean: bool = False

    @property
    def ordered(self) -> bool:
        return self.numeric and not self.boolean


@dataclass(frozen=True)
class Atom:
    feature: Feature
    op: str  # "==", "!=", "<" (levels below index), ">" (levels above index)
    index: int

    def mask(self) -> np.ndarray:
        return _compare(self.op, self.feature.codes, self.index)

    def levels(self) -> np.ndarray:
        """The indices of the feature's values the atom covers."""
        return np.flatnonzero(_compare(self.op, np.arange(len(self.feature.levels)), self.index))

    @property
    def cost(self) -> int:
        return _COST[self.feature.kind]

    @property
    def text(self) -> str:
        f = self.feature
        value = f.levels[self.index]
        if f.boolean:
            return f.text if (self.op == "==") == bool(value) else f"not {f.text}"
        if self.op in "<>" and isinstance(value, float) and value != int(value):
            lo, hi = (f.levels[self.index - 1], value) if self.op == "<" else (value, f.levels[self.index + 1])
            value = _nice(lo, hi, self.op)
        return f"{f.text} {self.op} {_literal(value)}"


def _compare(op: str, codes: np.ndarray, index: int) -> np.ndarray:
    return {"==": codes == index, "!=": codes != index, "<": codes < index, ">": codes > index}[op]


@dataclass(frozen=True)
class Term:
    """Atoms joined by ``and``, with the counts of evaluating its text on the table."""

    text: str
    atoms: int
    failed: int  # configs of the status it covers
    matched: int  # evaluated configs it covers, whatever their status
    ok: int  # OK configs it covers: its exceptions
    mask: np.ndarray  # the configs of the status it covers


@dataclass(frozen=True)
class Rule:
    """The rule of one failure status on one table: its terms (none when no pattern covers
    two of its configs without covering OK ones)."""

    status: str
    failed: int  # configs that failed with the status
    terms: tuple[Term, ...]

    @property
    def explained(self) -> int:
        """Failed configs at least one term covers."""
        return int(np.logical_or.reduce([t.mask for t in self.terms]).sum()) if self.terms else 0

    @property
    def ok(self) -> int:
        return sum(t.ok for t in self.terms)

    @property
    def exact(self) -> bool:
        return bool(self.terms) and all(t.ok == 0 for t in self.terms)

    @property
    def text(self) -> str:
        return " or ".join(f"({t.text})" if t.atoms > 1 and len(self.terms) > 1 else t.text for t in self.terms)


# -- features ----------------------------------------------------------------------------------------
def features(table: Table, pairs: bool = True) -> list[Feature]:
    """The knobs (those with two values or more), the derived values, and the products and
    ratios of pairs of size-like knobs: numeric, three values or more, all positive (a knob
    of 0 and 1, or of a few modes, pairs with another by ``and``, not by arithmetic)."""
    out: list[Feature] = []
    numeric: dict[str, np.ndarray] = {}
    for kind, columns in (("knob", {k: table.columns[k] for k in table.knobs}), ("derived", table.derived)):
        for name, col in columns.items():
            f = _feature(name, kind, col)
            if f is None or len(f.levels) < 2:
                continue
            out.append(f)
            if kind == "knob" and f.ordered and len(f.levels) >= 3 and min(f.levels) > 0:
                numeric[name] = np.asarray(f.levels, dtype=np.float64)[f.codes]
    if pairs:
        names = list(numeric)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                x, y = numeric[a], numeric[b]
                out.append(_numeric_feature(f"{a} * {b}", "product", x * y))
                for p, q, u, v in ((a, b, x, y), (b, a, y, x)):
                    if np.all(v != 0):
                        out.append(_numeric_feature(f"{p} / {q}", "ratio", u / v))
    return [f for f in out if len(f.levels) > 1]


def _feature(name: str, kind: str, col: np.ndarray) -> Feature | None:
    values = list(col)
    if not values or any(v is None or isinstance(v, (tuple, list, dict)) for v in values):
        return None  # a list-valued knob has no literal to compare with
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        levels = tuple(sorted({bool(v) for v in values}))
        return Feature(name, kind, levels, np.array([levels.index(bool(v)) for v in values], dtype=np.int32),
                       numeric=True, boolean=True)
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
           for v in values):
        x = np.array(values, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            return None
        f = _numeric_feature(name, kind, x)
        if all(isinstance(v, (int, np.integer)) for v in values):  # exact integer literals
            f = Feature(f.text, f.kind, tuple(int(v) for v in f.levels), f.codes, True)
        return f
    if all(isinstance(v, str) for v in values):
        levels = tuple(dict.fromkeys(values))
        index = {v: j for j, v in enumerate(levels)}
        return Feature(name, kind, levels, np.array([index[v] for v in values], dtype=np.int32), numeric=False)
    return None


def _numeric_feature(text: str, kind: str, x: np.ndarray) -> Feature:
    levels, codes = np.unique(x, return_inverse=True)
    if np.all(levels == np.round(levels)) and np.all(np.abs(levels) < 2 ** 53):
        values: tuple = tuple(int(v) for v in levels)
    else:
        values = tuple(float(v) for v in levels)
    return Feature(text, kind, values, codes.astype(np.int32).ravel(), numeric=True)


def _literal(v: Any) -> str:
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, float) and v == int(v) and abs(v) < 2 ** 53:
        return str(int(v))
    return repr(v)


def _nice(lo: float, hi: float, op: str) -> float:
    """The number with the fewest significant digits in [lo, hi) (``>``: covers above lo)
    or (lo, hi] (``<``: covers below hi)."""
    scale = max(abs(lo), abs(hi)) or 1.0
    for digits in range(1, 18):
        q = 10.0 ** (math.floor(math.log10(scale)) - digits + 1)
        c = float(f"{(math.ceil(lo / q) if op == '>' else math.floor(hi / q)) * q:.{digits + 2}g}")
        if (lo <= c < hi) if op == ">" else (lo < c <= hi):
            return c
    return lo if op == ">" else hi


# -- the search --------------------------------------------------------------------------------------
class _Grid:
    """Every feature's codes side by side, offset so that one ``bincount`` counts the configs
    of every (feature, value) position at once; per op, the positions that make an atom."""

    def __init__(self, feats: Sequence[Feature], n: int):
        self.feats = list(feats)
        sizes = np.array([len(f.levels) for f in feats], dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.size = int(sizes.sum())
        self.codes = (np.stack([f.codes for f in feats], axis=1).astype(np.int64) + self.start
                      if feats else np.zeros((n, 0), dtype=np.int64))
        self.owner = np.repeat(np.arange(len(feats)), sizes)  # position -> feature
        self.level = np.arange(self.size) - self.start[self.owner]  # position -> its level index
        m = sizes[self.owner]

        def per_feature(fn, dtype):
            return np.array([fn(f) for f in feats], dtype=dtype)[self.owner] if feats else np.zeros(0, dtype)

        ordered = per_feature(lambda f: f.ordered, bool)
        allowed = {op: per_feature(lambda f, op=op: op in _OPS[f.kind], bool) for op in ("==", "!=", "<", ">")}
        # a value of two: "==" says it (and "!=" or an inequality would say the same of the other)
        self.ok_op = {"==": allowed["=="] | (m == 2), "!=": allowed["!="] & (m > 2),
                      ">": allowed[">"] & ordered & (m > 2) & (self.level < m - 1),
                      "<": allowed["<"] & ordered & (m > 2) & (self.level > 0)}

    def counts(self, rows: np.ndarray) -> np.ndarray:
        if len(rows) == 0:
            return np.zeros(self.size, dtype=np.int64)
        return np.bincount(self.codes[rows].ravel(), minlength=self.size)

    def cover(self, fail_rows: np.ndarray, ok_rows: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per op, the failed and OK configs (of those given) each position's atom covers."""
        cf, co = self.counts(fail_rows), self.counts(ok_rows)
        tf, to = len(fail_rows), len(ok_rows)
        inc_f, inc_o = self._at_or_below(cf), self._at_or_below(co)
        return {"==": (cf, co), "!=": (tf - cf, to - co), ">": (tf - inc_f, to - inc_o), "<": (inc_f - cf, inc_o - co)}

    def _at_or_below(self, c: np.ndarray) -> np.ndarray:
        total = np.cumsum(c)
        return total - (total[self.start] - c[self.start])[self.owner]

    def atom(self, op: str, position: int) -> Atom:
        return _canonical(Atom(self.feats[self.owner[position]], op, int(self.level[position])))


def _canonical(a: Atom) -> Atom:
    """The atom as a person writes it: a knob's one value ``==``, all but one ``!=``; a run
    of the highest (lowest) values of an ordered feature ``>`` (``<``)."""
    f, m = a.feature, len(a.feature.levels)
    covered = a.levels()
    if len(covered) == 1 and (f.kind in ("knob", "derived") or not f.ordered
                              or (0 < covered[0] < m - 1 and "==" in _OPS[f.kind])):
        return Atom(f, "==", int(covered[0]))
    if len(covered) == m - 1 and f.kind in ("knob", "derived") and m > 2:
        return Atom(f, "!=", int(np.setdiff1d(np.arange(m), covered)[0]))
    if f.ordered and len(covered) and np.all(np.diff(covered) == 1):
        if covered[-1] == m - 1 and covered[0] > 0:
            return Atom(f, ">", int(covered[0] - 1))
        if covered[0] == 0 and covered[-1] < m - 1:
            return Atom(f, "<", int(covered[-1] + 1))
    return a


@dataclass(frozen=True)
class _Pick:
    atoms: tuple[Atom, ...]
    failed: int
    ok: int

    @property
    def key(self) -> tuple:
        """Better first: more failed configs, fewer OK ones, cheaper, plainer features."""
        return (-self.failed, self.ok, sum(a.cost for a in self.atoms),
                sum(_KIND_RANK[a.feature.kind] for a in self.atoms))


def _allowed(fc: np.ndarray, oc: np.ndarray, allow: int) -> np.ndarray:
    """Terms whose exceptions are within ``allow`` and, when any, precise enough."""
    if allow <= 0:
        return oc == 0
    return (oc <= allow) & (oc * PER_EXCEPTION <= fc)


def _best_term(grid: _Grid, fail: np.ndarray, ok: np.ndarray, allow: int) -> _Pick | None:
    """The best term (``_Pick.key``) covering configs of ``fail`` (rows) and at most
    ``allow`` of ``ok``: a beam search over conjunctions of up to ``MAX_ATOMS`` atoms."""
    if grid.size == 0 or len(fail) == 0:
        return None
    in_play = np.concatenate([fail, ok])
    is_fail = np.zeros(len(grid.codes), dtype=bool)
    is_fail[fail] = True
    best: _Pick | None = None
    beam: list[tuple[tuple[Atom, ...], np.ndarray]] = [((), in_play)]
    for depth in range(MAX_ATOMS):
        candidates: list[tuple[float, tuple[Atom, ...], str, int]] = []
        for atoms, rows in beam:
            f_rows, o_rows = rows[is_fail[rows]], rows[~is_fail[rows]]
            for op, (fc, oc) in grid.cover(f_rows, o_rows).items():
                valid = grid.ok_op[op] & (fc >= MIN_COVER)
                if best is not None:
                    valid &= fc >= best.failed
                if atoms:  # an atom that takes nothing away adds nothing
                    valid &= (fc + oc) < len(rows)
                for i in np.flatnonzero(valid & _allowed(fc, oc, allow)):
                    pick = _Pick(atoms + (grid.atom(op, int(i)),), int(fc[i]), int(oc[i]))
                    if best is None or pick.key < best.key:
                        best = pick
                if depth + 1 < MAX_ATOMS:
                    open_ = np.flatnonzero(valid & (oc > 0))
                    score = fc[open_] * fc[open_] / (fc[open_] + oc[open_])
                    order = np.argsort(-score, kind="stable")[:BEAM]
                    candidates += [(float(score[j]), atoms, op, int(open_[j])) for j in order]
        if not candidates:
            break
        candidates.sort(key=lambda c: -c[0])
        beam, seen = [], set()
        for _, atoms, op, i in candidates:
            grown = atoms + (grid.atom(op, i),)
            key = frozenset(a.text for a in grown)
            if key not in seen:
                seen.add(key)
                beam.append((grown, _rows_of(grown, in_play)))
            if len(beam) >= BEAM:
                break
    return best


def _rows_of(atoms: tuple[Atom, ...], rows: np.ndarray) -> np.ndarray:
    for a in atoms:
        rows = rows[a.mask()[rows]]
    return rows


def search(table: Table, status: str, *, ok_budget: int | None = None, exclude: np.ndarray | None = None,
           grid: _Grid | None = None) -> Rule:
    """The rule of ``status`` on ``table`` (the module's doc). ``ok_budget``: the OK configs
    its inexact terms may cover (default ``OK_BUDGET`` of the table's); ``exclude``: OK
    configs earlier rules cover already (not counted again)."""
    if grid is None:
        grid = _Grid(features(table), len(table))
    fail = table.statuses == status
    budget = int(OK_BUDGET * table.ok.sum()) if ok_budget is None else ok_budget
    free_ok = table.ok & ~exclude if exclude is not None else table.ok.copy()
    uncovered = fail.copy()
    picks: list[_Pick] = []
    for allow_any in (False, True):
        while uncovered.sum() >= MIN_COVER and len(picks) < MAX_TERMS:
            allow = budget if allow_any else 0
            if allow_any and allow <= 0:
                break
            pick = _best_term(grid, np.flatnonzero(uncovered), np.flatnonzero(free_ok), allow)
            if pick is None:
                break
            pick = _Pick(_shortest(pick.atoms, uncovered, free_ok), pick.failed, pick.ok)
            mask = _masked(pick.atoms)
            picks.append(pick)
            uncovered &= ~mask
            budget -= int((free_ok & mask).sum())
            free_ok &= ~mask
    return Rule(status, int(fail.sum()), tuple(_term(table, p, fail) for p in picks))


def _shortest(atoms: tuple[Atom, ...], fail: np.ndarray, ok: np.ndarray) -> tuple[Atom, ...]:
    """The atoms without those that change nothing: of two bounds of one feature on one side
    the tighter, then any atom whose removal covers no more OK configs and no fewer failed."""
    kept: list[Atom] = []
    for a in atoms:
        same = next((i for i, b in enumerate(kept) if b.feature is a.feature and b.op == a.op and a.op in "<>"), None)
        if same is None:
            kept.append(a)
        elif (a.index > kept[same].index) == (a.op == ">"):
            kept[same] = a
    covers = _masked(kept)
    target = (int((covers & fail).sum()), int((covers & ok).sum()))
    for a in sorted(kept, key=lambda a: -a.cost):
        if len(kept) == 1:
            break
        rest = [b for b in kept if b is not a]
        m = _masked(rest)
        if int((m & fail).sum()) >= target[0] and int((m & ok).sum()) <= target[1]:
            kept = rest
    return tuple(kept)


def _masked(atoms) -> np.ndarray:
    return np.logical_and.reduce([a.mask() for a in atoms])


def _term(table: Table, pick: _Pick, fail: np.ndarray) -> Term:
    text = " and ".join(a.text for a in pick.atoms)
    mask = evaluate(table, text)
    return Term(text, len(pick.atoms), int((mask & fail).sum()), int(mask.sum()), int((mask & table.ok).sum()),
                mask & fail)


def rules(table: Table) -> list[Rule]:
    """A rule per failure status of the table, closest to success first (``FAILURE_ORDER``);
    the OK configs inexact terms may cover (``OK_BUDGET``) shared among them, the status
    with the most failed configs served first."""
    failures = table.failures()
    if not failures or not table.ok.any():
        return []
    grid = _Grid(features(table), len(table))
    order = {s.value: i for i, s in enumerate(FAILURE_ORDER)}
    budget = int(OK_BUDGET * table.ok.sum())
    covered = np.zeros(len(table), dtype=bool)
    out = []
    for status in sorted(failures, key=lambda s: (-failures[s], order.get(s, len(order)))):
        rule = search(table, status, ok_budget=budget - int(covered.sum()), exclude=covered, grid=grid)
        for t in rule.terms:
            covered |= evaluate(table, t.text) & table.ok
        out.append(rule)
    return sorted(out, key=lambda r: order.get(r.status, len(order)))


# -- the spec's words ----------------------------------------------------------------------------------
def evaluate(table: Table, text: str) -> np.ndarray:
    """Which configs of ``table`` an expression is true for, by the spec's vector evaluator."""
    expr = parse(text)
    env = {}
    for name in expr.names:
        col = table.columns[name] if name in table.columns else table.derived[name]
        env[name] = _array(col)
    return np.asarray(expr.evaluate_vec(env, len(table)), dtype=bool)


def _array(col: np.ndarray) -> np.ndarray:
    values = list(col)
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.array(values, dtype=bool)
    if all(isinstance(v, (int, np.integer)) for v in values) and all(-2 ** 62 < int(v) < 2 ** 62 for v in values):
        return np.array([int(v) for v in values], dtype=np.int64)
    if all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        return np.array(values, dtype=np.float64)
    return col


def negate(text: str) -> str:
    """The negation of a term, as a person would write it: a flipped comparison for one
    atom, ``not (…)`` for several."""
    if " and " in text:
        return f"not ({text})"
    if text.startswith("not "):
        return text[4:]
    for a, b in ((" == ", " != "), (" != ", " == "), (" < ", " >= "), (" > ", " <= ")):
        if a in text:
            left, right = text.split(a, 1)
            return f"{left}{b}{right}"
    return f"not {text}"


def reason(status: str, text: str, failed: int, matched: int, ok: int) -> str:
    """What a term explains, for its constraint's ``reason``: 'COMPILE_ERROR in 12 of 12
    configs with A * B > 8; no OK config pruned' (``failed`` of the ``matched`` evaluated
    configs the term covers failed with the status; ``ok`` of them were OK)."""
    pruned = "no OK config pruned" if ok == 0 else f"{ok} OK config{'s' * (ok != 1)} pruned"
    return f"{status} in {failed} of {matched} configs with {text}; {pruned}"
