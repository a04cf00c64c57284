"""The vector evaluator of the expression language (``Expr.evaluate_vec``): a checked tree
evaluated on many configurations at once, numpy arrays with one element per configuration.

Python's meaning is kept: the right side of ``and``/``or`` and the branches of a
conditional are evaluated only on the rows that reach them, and integer results are
Python's exact ones. Every value comes with a bound: for an integer value (a Python int,
an integer or boolean array) an upper bound of its magnitude, None for anything else
(floats, strings, Python objects). An operation on integers runs in int64 only when the
bounds prove its result fits; otherwise it runs on Python integers, element by element,
with the same checks as the scalar evaluator (``expr_ops.py``).
"""

from __future__ import annotations

import ast
from typing import Any, Mapping

import numpy as np

from ..errors import ExprError
from .expr_ops import (BINOPS, BITOPS, CMPOPS, DIVISIONS, EXACT_FLOAT, I64_MAX, I64_MIN, SCALAR_BINOPS,
                       FUNCTIONS, bare_error, shortened, shown)

_MISSING = object()


def _is_array(v) -> bool:
    return isinstance(v, np.ndarray) and v.ndim > 0


def _py(v):
    """A numpy scalar (or 0-d array) as the Python value it holds."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    return v.item() if isinstance(v, np.generic) else v


def _bound(v) -> int | None:
    """An upper bound of |v| for an integer value, else None."""
    if isinstance(v, (bool, np.bool_)):
        return 1
    if isinstance(v, (int, np.integer)):
        return abs(int(v))
    if isinstance(v, np.ndarray):
        kind = v.dtype.kind
        if kind == "b":
            return 1
        if kind in "iu":
            if v.size == 0:
                return 0
            return max(int(v.max()), -int(v.min()))
    return None


def _needs_python(v) -> bool:
    """Values numpy would not treat as Python does: strings and Python objects."""
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "OUS"
    return isinstance(v, str)


def _unbool(v):
    """Booleans as integers for arithmetic (Python: True + True == 2; numpy: True)."""
    if isinstance(v, np.ndarray) and v.dtype == bool:
        return v.astype(np.int64)
    return v


def _min(v) -> int:
    if isinstance(v, np.ndarray):
        return int(v.min()) if v.size else 0
    return int(v)


def _each(fn, *values):
    """fn on Python values, element by element; the result narrowed back to a plain dtype."""
    args = [np.asarray(v, dtype=object) if isinstance(v, np.ndarray) else _py(v) for v in values]
    return _narrow(np.frompyfunc(fn, len(args), 1)(*args))


def _narrow(out):
    if not isinstance(out, np.ndarray) or out.dtype != object or out.size == 0:
        return out
    kinds = {type(x) for x in out.flat}
    if kinds == {int}:
        if I64_MIN <= min(out.flat) and max(out.flat) <= I64_MAX:
            return out.astype(np.int64)
    elif kinds == {bool}:
        return out.astype(bool)
    elif kinds == {float}:
        return out.astype(np.float64)
    elif kinds == {str}:
        return out.astype(str)
    return out


def _arith(op, a, ba, b, bb):
    """a <op> b with Python's exact result; returns (value, bound)."""
    scalar = SCALAR_BINOPS[op]
    if not _is_array(a) and not _is_array(b):
        r = scalar(_py(a), _py(b))
        return r, _bound(r)
    if _needs_python(a) or _needs_python(b):
        r = _each(scalar, a, b)
        return r, _bound(r)
    if ba is None or bb is None:  # floats: numpy's arithmetic is Python's
        if op is ast.Pow:
            a = _as_float_if_negative_exponent(a, b)
        return BINOPS[op](_unbool(a), _unbool(b)), None
    exact = ba <= I64_MAX and bb <= I64_MAX
    bound: int | None = None
    if exact:
        if op in BITOPS:
            if _is_bool(a) and _is_bool(b):
                return BINOPS[op](a, b), 1
            bound = 1 << max(ba.bit_length(), bb.bit_length())
            return BINOPS[op](_unbool(a), _unbool(b)), bound
        if op is ast.Div:
            if ba <= EXACT_FLOAT and bb <= EXACT_FLOAT:
                return BINOPS[op](_unbool(a), _unbool(b)), None
            exact = False
        elif op in (ast.Add, ast.Sub):
            bound = ba + bb
        elif op is ast.Mult:
            bound = ba * bb
        elif op is ast.FloorDiv:
            bound = ba
        elif op is ast.Mod:
            bound = bb
        elif op is ast.Pow:
            if _min(b) < 0:  # a negative exponent: a float, as in Python
                return BINOPS[op](_as_float_if_negative_exponent(a, b), b), None
            bound = 1 if ba <= 1 else (ba**bb if bb * ba.bit_length() <= 64 else None)
        elif op is ast.LShift:
            bound = (ba << bb) if _min(b) >= 0 and bb < 64 else None
        elif op is ast.RShift:
            bound = ba if _min(b) >= 0 and bb < 64 else None
    if exact and bound is not None and bound <= I64_MAX:
        return BINOPS[op](_unbool(a), _unbool(b)), bound
    r = _each(scalar, a, b)
    return r, _bound(r)


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_)) or (isinstance(v, np.ndarray) and v.dtype == bool)


class Vectorised:
    """Evaluates a checked tree over numpy arrays of configurations."""

    def __init__(self, env: Mapping[str, Any], n: int, source: str, bounds: dict | None = None):
        self.env = env
        self.n = n
        self.source = source
        self.bounds = bounds if bounds is not None else {}  # name -> bound of its value

    def eval(self, node):
        return self.ev(node)[0]

    def ev(self, node):
        """(value, bound) of a node."""
        return getattr(self, "_" + type(node).__name__)(node)

    def _Constant(self, node):
        return node.value, _bound(node.value)

    def _Name(self, node):
        try:
            value = self.env[node.id]
        except KeyError:
            raise ExprError(f"unknown name '{node.id}' in '{shortened(self.source)}'") from None
        bound = self.bounds.get(node.id, _MISSING)
        if bound is _MISSING:
            bound = self.bounds[node.id] = _bound(value)
        return value, bound

    def _BinOp(self, node):
        left, bl = self.ev(node.left)
        right, br = self.ev(node.right)
        if isinstance(node.op, DIVISIONS):
            zero = np.asarray(right) == 0
            if np.any(zero):
                raise ExprError(f"division by zero in '{shortened(self.source)}'{self._example(zero)}")
        try:
            return _arith(type(node.op), left, bl, right, br)
        except ExprError as exc:
            if not getattr(exc, "bare", False):
                raise
            raise bare_error(f"{exc}{self._example(self._failing_row(type(node.op), left, right))}") from None

    def _failing_row(self, op, left, right) -> np.ndarray:
        """The first row on which a checked operation fails (for the message)."""
        a = np.broadcast_to(np.asarray(left, dtype=object), (self.n,))
        b = np.broadcast_to(np.asarray(right, dtype=object), (self.n,))
        bad = np.zeros(self.n, dtype=bool)
        for i in range(self.n):
            try:
                SCALAR_BINOPS[op](a[i], b[i])
            except ExprError:
                bad[i] = True
                break
        return bad

    def _UnaryOp(self, node):
        v, b = self.ev(node.operand)
        if isinstance(node.op, ast.Not):
            return (np.logical_not(_truth(v, self.n)) if _is_array(v) else (not _py(v))), 1
        scalar = {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Invert: lambda x: ~x}[type(node.op)]
        if not _is_array(v):
            r = scalar(_py(v))
            return r, _bound(r)
        if _needs_python(v) or (b is not None and b > I64_MAX):
            r = _each(scalar, v)
            return r, _bound(r)
        r = scalar(_unbool(v))
        return r, (None if b is None else (b + 1 if isinstance(node.op, ast.Invert) else b))

    def _BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = _truth(self.eval(node.values[0]), self.n)
        for value in node.values[1:]:
            pending = result if is_and else ~result  # rows whose outcome is still open
            if not pending.any():
                break
            if pending.all():
                part = _truth(self.eval(value), self.n)
            else:
                part = _truth(self._on_rows(value, pending), int(pending.sum()))
            result = result.copy()
            result[pending] = part
        return result, 1

    def _Compare(self, node):
        left, bl = self.ev(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                choices = tuple(_literal(e) for e in right_node.elts)
                if _is_array(left) and left.dtype != object and (bl is None or bl <= I64_MAX) and not any(
                        isinstance(c, int) and not I64_MIN <= c <= I64_MAX for c in choices):
                    part = np.isin(left, np.asarray(choices, dtype=object if _mixed(choices) else None))
                elif _is_array(left):
                    part = _each(lambda x: x in choices, left).astype(bool)
                else:
                    part = _py(left) in choices
                if isinstance(op, ast.NotIn):
                    part = np.logical_not(part)
                right, br = None, None
            else:
                right, br = self.ev(right_node)
                part = _compare(type(op), left, bl, right, br)
            part = np.asarray(part)
            result = part if result is None else (result & part)
            left, bl = right, br
        return result, 1

    def _IfExp(self, node):
        cond = _truth(self.eval(node.test), self.n)
        if cond.all():
            return self.ev(node.body)
        if not cond.any():
            return self.ev(node.orelse)
        yes, by = self._on_rows(node.body, cond, with_bound=True)
        no, bn = self._on_rows(node.orelse, ~cond, with_bound=True)
        if (yes.dtype.kind in "US") != (no.dtype.kind in "US"):
            dtype = object  # numpy would turn the numbers into strings
        else:
            try:
                dtype = np.result_type(yes, no)
            except TypeError:
                dtype = object
        out = np.empty(self.n, dtype=dtype)
        out[cond] = yes
        out[~cond] = no
        return out, (max(by, bn) if by is not None and bn is not None else _bound(out))

    def _Call(self, node):
        name = node.func.id
        evaluated = [self.ev(a) for a in node.args]
        values = [v for v, _ in evaluated]
        bounds = [b for _, b in evaluated]
        try:
            return self._call(name, values, bounds)
        except TypeError as exc:
            raise ExprError(f"bad call in '{shortened(self.source)}': {exc}") from None

    def _call(self, name: str, values: list, bounds: list):
        scalar, vector = FUNCTIONS[name]
        if not any(_is_array(v) for v in values):
            r = scalar(*map(_py, values))
            return r, _bound(r)
        if name in ("cdiv", "round_up") and len(values) == 2:
            (a, m), (ba, bm) = values, bounds
            zero = np.asarray(m) == 0
            if np.any(zero):
                raise ExprError(f"division by zero in '{shortened(self.source)}'{self._example(zero)}")
            neg, bneg = self._negate(a, ba)
            q, bq = _arith(ast.FloorDiv, neg, bneg, m, bm)
            q, bq = self._negate(q, bq)
            return _arith(ast.Mult, q, bq, m, bm) if name == "round_up" else (q, bq)
        if any(_needs_python(v) for v in values) or any(b is not None and b > I64_MAX for b in bounds):
            r = _each(scalar, *values)
            return r, _bound(r)
        if name in ("ceil", "floor", "round", "int") and len(values) == 1:
            v, b = values[0], bounds[0]
            if b is not None:  # already an integer
                return _unbool(v), b
            f = np.asarray(v, dtype=np.float64)
            if not np.all(np.abs(f) < 2.0**62):  # beyond int64, or nan/inf: as Python does it
                r = _each(scalar, v)
                return r, _bound(r)
            r = vector(f)
            return r, _bound(r)
        if name in ("min", "max"):
            r = vector(*values)
            return r, (max(bounds) if all(b is not None for b in bounds) else _bound(r))
        if name == "abs":
            r = np.abs(_unbool(values[0]))
            return r, bounds[0]
        r = vector(*map(_unbool, values))
        return r, _bound(r)

    def _negate(self, v, b):
        if not _is_array(v):
            r = -_py(v)
            return r, _bound(r)
        if _needs_python(v) or (b is not None and b > I64_MAX):
            r = _each(lambda x: -x, v)
            return r, _bound(r)
        return -_unbool(v), b

    def _Tuple(self, node):
        raise ExprError(f"tuples are only allowed after 'in': '{shortened(self.source)}'")

    _List = _Tuple

    def _on_rows(self, node, mask: np.ndarray, with_bound: bool = False):
        """Evaluate ``node`` only on the rows where mask is true."""
        count = int(mask.sum())
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        sub = {}
        for name in used:
            if name in FUNCTIONS and name not in self.env:
                continue
            value, _ = self._Name(ast.Name(id=name))
            arr = np.asarray(value)
            sub[name] = arr[mask] if arr.ndim == 1 and arr.shape[0] == self.n else value
        # bounds of the whole rows hold for a subset of them
        out, bound = Vectorised(sub, count, self.source, {k: v for k, v in self.bounds.items() if k in sub}).ev(node)
        out = np.asarray(out)
        if out.ndim == 0:
            out = np.full(count, out[()], dtype=out.dtype if out.dtype != object else object)
        return (out, bound) if with_bound else out

    def _example(self, bad: np.ndarray) -> str:
        if bad.ndim == 0:
            return ""
        row = int(np.argmax(bad))
        parts = []
        for name in sorted(self.env.keys() if hasattr(self.env, "keys") else []):
            try:
                arr = np.asarray(self.env[name])
            except Exception:  # noqa: BLE001 - a lazy value that cannot be computed
                continue
            if arr.ndim == 1 and arr.shape[0] == self.n and len(parts) < 12:
                parts.append(f"{name}={shown(_py(arr[row]))}")
        return f" for {', '.join(parts)}" if parts else ""


def _compare(op, a, ba, b, bb):
    fn = CMPOPS[op]
    if not _is_array(a) and not _is_array(b):
        return fn(_py(a), _py(b))
    objects = any(isinstance(v, np.ndarray) and v.dtype == object for v in (a, b))
    huge = any(x is not None and x > I64_MAX for x in (ba, bb))
    # an integer beyond 2**53 against a float: numpy would round the integer first
    inexact = (ba is None) != (bb is None) and max(x for x in (ba, bb) if x is not None) > EXACT_FLOAT and not (
        _needs_python(a) or _needs_python(b))
    if objects or huge or inexact:
        return _each(fn, a, b).astype(bool)
    return fn(a, b)


def _mixed(values) -> bool:
    return len({type(v) is str for v in values}) > 1


def _truth(v, n: int) -> np.ndarray:
    arr = np.asarray(v)
    if arr.dtype != bool:
        arr = arr.astype(bool)
    if arr.ndim == 0:
        return np.full(n, bool(arr))
    return arr


def _as_float_if_negative_exponent(base, exp):
    e = np.asarray(exp)
    if e.dtype.kind in "iu" and e.size and np.any(e < 0):
        return np.asarray(base, dtype=np.float64)
    return base


def _literal(node):
    if isinstance(node, ast.Constant):
        return node.value
    return -node.operand.value  # negative constant, checked by parse
