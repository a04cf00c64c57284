"""The spec's expression language: a safe subset of Python.

Allowed: numbers, strings, True/False, names, arithmetic (+ - * / // % **), bit
operations (& | ^ ~ << >>), comparisons (chained too), and/or/not, ``in`` / ``not in``
with a literal tuple or list, conditional expressions (``a if c else b``) and calls of
the whitelisted functions in FUNCTIONS. Nothing else: no attribute access, no
subscripts, no lambdas, no comprehensions, no dunder names.

An expression is parsed and checked once (``parse``) and then evaluated either on one
configuration (``Expr.evaluate``, plain Python values) or on many at once
(``Expr.evaluate_vec``, numpy arrays with one element per configuration). The vector
evaluator keeps Python's short-circuit meaning: the right side of ``and``/``or`` and the
branches of a conditional are evaluated only on the rows that reach them, so
``X != 0 and Y % X == 0`` never divides by zero.

Both evaluators give Python's exact integer results. The vector evaluator computes in
int64 only where bounds on the operands' magnitudes prove that no result can wrap;
elsewhere it computes that one operation with Python integers, row by row.

Limits keep a spec from hanging or exhausting memory (docs/spec.md, "Limits"): an
expression has at most MAX_SOURCE_CHARS characters and is nested at most MAX_DEPTH
levels; the integer results of ``*``, ``**`` and ``<<`` have at most MAX_INT_BITS bits,
a shift is by at most MAX_INT_BITS bits, and ``str * n`` makes at most MAX_STR_LEN
characters.
"""

from __future__ import annotations

import ast
import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ExprError

MAX_SOURCE_CHARS = 10_000
MAX_DEPTH = 100
MAX_INT_BITS = 4096
MAX_STR_LEN = 10_000

_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)
_EXACT_FLOAT = 2**53  # integers up to this magnitude are exact as float64


# -- checked operations: the limits on integer size and string length -------------------


def _show(x) -> str:
    """A value for a message: a huge integer by its size, not its digits."""
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 64:
        return f"<a {x.bit_length()}-bit integer>"
    if isinstance(x, str) and len(x) > 40:
        return repr(x[:40]) + "…"
    return repr(x)


def _int(x) -> int | None:
    """x as a Python int when it is an integer (booleans too), else None."""
    if isinstance(x, (int, np.integer)):
        return int(x)
    return None


def _bare(message: str) -> ExprError:
    """An error of one operation; the evaluator adds the expression and the values."""
    exc = ExprError(message)
    exc.bare = True
    return exc


def _int_limit(value, what: str):
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _bare(f"{what} has more than {MAX_INT_BITS} bits (the limit of integers in expressions)")
    return value


def _pow(a, b):
    ia, ib = _int(a), _int(b)
    if ia is None or ib is None:
        return a**b
    if ib > 0 and abs(ia) > 1 and (ib > MAX_INT_BITS or (abs(ia).bit_length() - 1) * ib > MAX_INT_BITS):
        raise _bare(f"{_show(ia)} ** {_show(ib)} has more than {MAX_INT_BITS} bits "
                        "(the limit of integers in expressions)")
    return _int_limit(ia**ib, f"{_show(ia)} ** {_show(ib)}")


def _lshift(a, b):
    ia, ib = _int(a), _int(b)
    if ia is None or ib is None:
        return a << b
    if ia != 0 and ib > MAX_INT_BITS:
        raise _bare(f"{_show(ia)} << {_show(ib)} shifts by more than {MAX_INT_BITS} bits "
                        "(the limit of integers in expressions)")
    return _int_limit(ia << ib, f"{_show(ia)} << {_show(ib)}")


def _rshift(a, b):
    ia, ib = _int(a), _int(b)
    if ia is None or ib is None:
        return a >> b
    return ia >> ib


def _mul(a, b):
    if isinstance(a, str) or isinstance(b, str):
        text, times = (a, b) if isinstance(a, str) else (b, a)
        k = _int(times)
        if k is not None and len(text) * max(k, 0) > MAX_STR_LEN:
            raise _bare(f"{_show(text)} * {_show(k)} makes a string longer than {MAX_STR_LEN} characters "
                            "(the limit of strings in expressions)")
        return a * b
    ia, ib = _int(a), _int(b)
    if ia is None or ib is None:
        return a * b
    return _int_limit(ia * ib, f"{_show(ia)} * {_show(ib)}")


# -- functions --------------------------------------------------------------------------


def _is_pow2(x):
    return isinstance(x, (int, np.integer)) and x > 0 and (x & (x - 1)) == 0


def _cdiv(a, b):
    return -(-a // b)


def _round_up(a, m):
    return _mul(_cdiv(a, m), m)


# name -> (scalar implementation, vector implementation)
def _v_minmax(fn):
    def impl(*args):
        if len(args) == 1:
            raise _bare("min()/max() take two or more arguments, not a sequence")
        out = args[0]
        for a in args[1:]:
            out = fn(out, a)
        return out

    return impl


def _v_is_pow2(x):
    x = np.asarray(x)
    if x.dtype == bool:
        x = x.astype(np.int64)
    if x.dtype.kind not in "iu":
        return np.zeros(x.shape, dtype=bool)
    return (x > 0) & ((x & (x - 1)) == 0)


def _v_int_round(fn):
    def impl(x):
        return np.asarray(fn(x)).astype(np.int64)

    return impl


FUNCTIONS: dict[str, tuple[Callable, Callable]] = {
    "min": (min, _v_minmax(np.minimum)),
    "max": (max, _v_minmax(np.maximum)),
    "abs": (abs, np.abs),
    "ceil": (math.ceil, _v_int_round(np.ceil)),
    "floor": (math.floor, _v_int_round(np.floor)),
    "round": (round, _v_int_round(np.round)),
    "log2": (math.log2, np.log2),
    "sqrt": (math.sqrt, np.sqrt),
    "is_pow2": (_is_pow2, _v_is_pow2),
    "cdiv": (_cdiv, _cdiv),
    "round_up": (_round_up, _round_up),
    "int": (int, lambda x: np.asarray(x).astype(np.int64)),
    "float": (float, lambda x: np.asarray(x).astype(np.float64)),
}

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}
# The same on Python values, with the limits: what both evaluators run on single values.
_SCALAR_BINOPS = {**_BINOPS, ast.Mult: _mul, ast.Pow: _pow, ast.LShift: _lshift, ast.RShift: _rshift}
# Operators that the scalar evaluator's compiled code calls as checked functions.
_GUARDED = {ast.Pow: "__ks_pow", ast.LShift: "__ks_lshift", ast.Mult: "__ks_mul"}
_GUARD_FUNCTIONS = {"__ks_pow": _pow, "__ks_lshift": _lshift, "__ks_mul": _mul}
_DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)
_BITOPS = (ast.BitAnd, ast.BitOr, ast.BitXor)
_CMPOPS = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
_ALLOWED = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Call, ast.Name, ast.Constant, ast.Tuple, ast.List, ast.Load,
    ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Invert,
    ast.In, ast.NotIn, *_BINOPS, *_CMPOPS,
)
_REFUSED = {
    ast.Attribute: "attribute access ('.') is not allowed",
    ast.Subscript: "subscripts ('[...]') are not allowed",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.NamedExpr: "assignment (':=') is not allowed",
    ast.Starred: "'*' unpacking is not allowed",
    ast.JoinedStr: "f-strings are not allowed",
    ast.Await: "'await' is not allowed",
    ast.Dict: "dict literals are not allowed",
    ast.Set: "set literals are not allowed; use a tuple after 'in'",
}


@dataclass(frozen=True)
class Expr:
    """A checked expression. ``names`` are the free names it reads."""

    source: str
    names: frozenset[str]
    tree: ast.Expression = field(repr=False, compare=False)
    code: Any = field(repr=False, compare=False)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """Evaluate on one configuration (plain Python values)."""
        scope = {"__builtins__": {}}
        scope.update({k: f[0] for k, f in FUNCTIONS.items()})
        scope.update(_GUARD_FUNCTIONS)
        try:
            return eval(self.code, scope, _ScalarEnv(env))  # noqa: S307 - tree is whitelisted
        except ExprError as exc:
            if not getattr(exc, "bare", False):
                raise
            raise ExprError(f"{exc} in '{_short(self.source)}'{_for(env, self.names)}") from None
        except ZeroDivisionError:
            raise ExprError(f"division by zero in '{_short(self.source)}' for {_describe(env, self.names)}") from None
        except NameError as exc:
            raise ExprError(f"unknown name in '{_short(self.source)}': {exc}") from None
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ExprError(f"'{_short(self.source)}' failed for {_describe(env, self.names)}: {exc}") from None
        except (MemoryError, RecursionError):
            raise ExprError(f"'{_short(self.source)}' is too large to evaluate") from None

    def evaluate_vec(self, env: Mapping[str, Any], n: int) -> np.ndarray:
        """Evaluate on ``n`` configurations at once; env values are arrays of length n or scalars."""
        bounds = getattr(env, "int_bounds", None)
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out = _Vec(env, n, self.source, bounds).eval(self.tree.body)
        except ExprError as exc:
            if not getattr(exc, "bare", False):
                raise
            raise ExprError(f"{exc} in '{_short(self.source)}'") from None
        except ZeroDivisionError:
            raise ExprError(f"division by zero in '{_short(self.source)}'") from None
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ExprError(f"'{_short(self.source)}' failed: {exc}") from None
        except (MemoryError, RecursionError):
            raise ExprError(f"'{_short(self.source)}' is too large to evaluate") from None
        out = np.asarray(out)
        if out.ndim == 0:
            out = np.full(n, out[()], dtype=out.dtype if out.dtype != object else object)
        return out


class _ScalarEnv(dict):
    """Name lookup for scalar evaluation that raises a clear error for unknown names."""

    def __init__(self, env: Mapping[str, Any]):
        super().__init__()
        self._env = env

    def __missing__(self, key):
        # KeyError lets eval fall back to the whitelisted functions, then NameError.
        return self._env[key]


def _describe(env: Mapping[str, Any], names) -> str:
    parts = []
    for name in sorted(names):
        try:
            parts.append(f"{name}={_show(env[name])}")
        except KeyError:
            pass
    return ", ".join(parts) or "this configuration"


def _for(env: Mapping[str, Any], names) -> str:
    return f" for {_describe(env, names)}" if names else ""


def _first_line(message) -> str:
    return str(message).strip().splitlines()[0] if str(message).strip() else "invalid syntax"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def parse(source: str) -> Expr:
    """Parse and check an expression; raise ExprError naming what is not allowed."""
    if not isinstance(source, str):
        if isinstance(source, (int, float, bool)):
            source = repr(source)
        else:
            raise ExprError(f"an expression must be a string or a number, not {type(source).__name__}")
    text = source.strip()
    if not text:
        raise ExprError("the expression is empty")
    if len(text) > MAX_SOURCE_CHARS:
        raise ExprError(f"the expression has {len(text)} characters, more than the limit of {MAX_SOURCE_CHARS}: "
                        f"split it into derived values: '{_short(text, 60)}'")
    too_deep = (f"the expression is nested more than {MAX_DEPTH} levels deep: split it into derived values: "
                f"'{_short(text, 60)}'")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        if "too many nested" in str(exc.msg):
            raise ExprError(too_deep) from None
        raise ExprError(f"syntax error in '{_short(text, 80)}': {_first_line(exc.msg)}") from None
    except (RecursionError, MemoryError):
        raise ExprError(too_deep) from None
    except ValueError as exc:  # e.g. a null character
        raise ExprError(f"syntax error in '{_short(text, 80)}': {_first_line(exc)}") from None
    if _depth(tree) > MAX_DEPTH:
        raise ExprError(f"the expression is nested more than {MAX_DEPTH} levels deep (a sum of more than "
                        f"{MAX_DEPTH} terms counts as that deep): split it into derived values: '{_short(text, 60)}'")
    for node in ast.walk(tree):
        if type(node) in _REFUSED:
            raise ExprError(f"{_REFUSED[type(node)]}: '{_short(text)}'")
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"'{type(node).__name__}' is not allowed in expressions: '{_short(text)}'")
        if isinstance(node, ast.Name):
            if node.id.startswith("__"):
                raise ExprError(f"dunder names such as '{node.id}' are not allowed: '{_short(text)}'")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                called = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                raise ExprError(
                    f"function '{called}' is not allowed (allowed: {', '.join(sorted(FUNCTIONS))}): '{_short(text)}'"
                )
            if node.keywords:
                raise ExprError(f"keyword arguments are not allowed: '{_short(text)}'")
        elif isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)):
                    if not isinstance(right, (ast.Tuple, ast.List)) or not all(
                        isinstance(e, ast.Constant) or _is_negative_constant(e) for e in right.elts
                    ):
                        raise ExprError(f"'in' needs a literal tuple of constants on its right: '{_short(text)}'")
                elif not type(op) in _CMPOPS:
                    raise ExprError(f"'{type(op).__name__}' comparisons are not allowed: '{_short(text)}'")
        elif isinstance(node, (ast.Tuple, ast.List)):
            pass  # only reachable as the right side of 'in' (checked above) or refused at eval
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool)) or node.value is None:
                raise ExprError(f"constant {node.value!r} is not allowed: '{_short(text)}'")
            if isinstance(node.value, int) and node.value.bit_length() > MAX_INT_BITS:
                raise ExprError(f"the constant {_show(node.value)} has more than {MAX_INT_BITS} bits "
                                f"(the limit of integers in expressions): '{_short(text, 60)}'")
    _check_tuples_only_after_in(tree.body, text)
    names = _names_used_as_values(tree)
    code = compile(_guarded(tree), "<expr>", "eval")
    return Expr(source=text, names=frozenset(names), tree=tree, code=code)


def _depth(tree: ast.Expression) -> int:
    """How deeply the expression's nodes nest (a constant alone: 1); without recursion."""
    deepest = 0
    stack = [(tree.body, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > MAX_DEPTH:
                break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr))
    return deepest


class _Guard(ast.NodeTransformer):
    """``a ** b`` -> ``__ks_pow(a, b)`` (and ``<<``, ``*``): the checked operations."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        name = _GUARDED.get(type(node.op))
        if name is None:
            return node
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[node.left, node.right], keywords=[])
        return ast.copy_location(call, node)


def _guarded(tree: ast.Expression) -> ast.Expression:
    return ast.fix_missing_locations(_Guard().visit(copy.deepcopy(tree)))


def _is_negative_constant(node) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)


def _names_used_as_values(tree) -> set[str]:
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def _check_tuples_only_after_in(node, text: str) -> None:
    if isinstance(node, (ast.Tuple, ast.List)):
        raise ExprError(f"tuples and lists are only allowed after 'in': '{_short(text)}'")
    if isinstance(node, ast.Compare):
        _check_tuples_only_after_in(node.left, text)
        for op, right in zip(node.ops, node.comparators):
            if not isinstance(op, (ast.In, ast.NotIn)):
                _check_tuples_only_after_in(right, text)
        return
    for child in ast.iter_child_nodes(node):
        _check_tuples_only_after_in(child, text)


def _literal(node):
    if isinstance(node, ast.Constant):
        return node.value
    return -node.operand.value  # negative constant, checked by parse


# -- the vector evaluator -------------------------------------------------------------
#
# Every value comes with a bound: for an integer value (a Python int, an integer or
# boolean array) an upper bound of its magnitude, None for anything else (floats,
# strings, Python objects). An operation on integers runs in int64 only when the bounds
# prove its result fits; otherwise it runs on Python integers, element by element, with
# the same checks as the scalar evaluator.

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
        if _I64_MIN <= min(out.flat) and max(out.flat) <= _I64_MAX:
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
    scalar = _SCALAR_BINOPS[op]
    if not _is_array(a) and not _is_array(b):
        r = scalar(_py(a), _py(b))
        return r, _bound(r)
    if _needs_python(a) or _needs_python(b):
        r = _each(scalar, a, b)
        return r, _bound(r)
    if ba is None or bb is None:  # floats: numpy's arithmetic is Python's
        if op is ast.Pow:
            a = _as_float_if_negative_exponent(a, b)
        return _BINOPS[op](_unbool(a), _unbool(b)), None
    exact = ba <= _I64_MAX and bb <= _I64_MAX
    bound: int | None = None
    if exact:
        if op in _BITOPS:
            if _is_bool(a) and _is_bool(b):
                return _BINOPS[op](a, b), 1
            bound = 1 << max(ba.bit_length(), bb.bit_length())
            return _BINOPS[op](_unbool(a), _unbool(b)), bound
        if op is ast.Div:
            if ba <= _EXACT_FLOAT and bb <= _EXACT_FLOAT:
                return _BINOPS[op](_unbool(a), _unbool(b)), None
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
                return _BINOPS[op](_as_float_if_negative_exponent(a, b), b), None
            bound = 1 if ba <= 1 else (ba**bb if bb * ba.bit_length() <= 64 else None)
        elif op is ast.LShift:
            bound = (ba << bb) if _min(b) >= 0 and bb < 64 else None
        elif op is ast.RShift:
            bound = ba if _min(b) >= 0 and bb < 64 else None
    if exact and bound is not None and bound <= _I64_MAX:
        return _BINOPS[op](_unbool(a), _unbool(b)), bound
    r = _each(scalar, a, b)
    return r, _bound(r)


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_)) or (isinstance(v, np.ndarray) and v.dtype == bool)


class _Vec:
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
            raise ExprError(f"unknown name '{node.id}' in '{_short(self.source)}'") from None
        bound = self.bounds.get(node.id, _MISSING)
        if bound is _MISSING:
            bound = self.bounds[node.id] = _bound(value)
        return value, bound

    def _BinOp(self, node):
        left, bl = self.ev(node.left)
        right, br = self.ev(node.right)
        if isinstance(node.op, _DIVISIONS):
            zero = np.asarray(right) == 0
            if np.any(zero):
                raise ExprError(f"division by zero in '{_short(self.source)}'{self._example(zero)}")
        try:
            return _arith(type(node.op), left, bl, right, br)
        except ExprError as exc:
            if not getattr(exc, "bare", False):
                raise
            raise _bare(f"{exc}{self._example(self._failing_row(type(node.op), left, right))}") from None

    def _failing_row(self, op, left, right) -> np.ndarray:
        """The first row on which a checked operation fails (for the message)."""
        a = np.broadcast_to(np.asarray(left, dtype=object), (self.n,))
        b = np.broadcast_to(np.asarray(right, dtype=object), (self.n,))
        bad = np.zeros(self.n, dtype=bool)
        for i in range(self.n):
            try:
                _SCALAR_BINOPS[op](a[i], b[i])
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
        if _needs_python(v) or (b is not None and b > _I64_MAX):
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
                if _is_array(left) and left.dtype != object and (bl is None or bl <= _I64_MAX) and not any(
                        isinstance(c, int) and not _I64_MIN <= c <= _I64_MAX for c in choices):
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
            raise ExprError(f"bad call in '{_short(self.source)}': {exc}") from None

    def _call(self, name: str, values: list, bounds: list):
        scalar, vector = FUNCTIONS[name]
        if not any(_is_array(v) for v in values):
            r = scalar(*map(_py, values))
            return r, _bound(r)
        if name in ("cdiv", "round_up") and len(values) == 2:
            (a, m), (ba, bm) = values, bounds
            zero = np.asarray(m) == 0
            if np.any(zero):
                raise ExprError(f"division by zero in '{_short(self.source)}'{self._example(zero)}")
            neg, bneg = self._negate(a, ba)
            q, bq = _arith(ast.FloorDiv, neg, bneg, m, bm)
            q, bq = self._negate(q, bq)
            return _arith(ast.Mult, q, bq, m, bm) if name == "round_up" else (q, bq)
        if any(_needs_python(v) for v in values) or any(b is not None and b > _I64_MAX for b in bounds):
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
        if _needs_python(v) or (b is not None and b > _I64_MAX):
            r = _each(lambda x: -x, v)
            return r, _bound(r)
        return -_unbool(v), b

    def _Tuple(self, node):
        raise ExprError(f"tuples are only allowed after 'in': '{_short(self.source)}'")

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
        out, bound = _Vec(sub, count, self.source, {k: v for k, v in self.bounds.items() if k in sub}).ev(node)
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
                parts.append(f"{name}={_show(_py(arr[row]))}")
        return f" for {', '.join(parts)}" if parts else ""


def _compare(op, a, ba, b, bb):
    fn = _CMPOPS[op]
    if not _is_array(a) and not _is_array(b):
        return fn(_py(a), _py(b))
    objects = any(isinstance(v, np.ndarray) and v.dtype == object for v in (a, b))
    huge = any(x is not None and x > _I64_MAX for x in (ba, bb))
    # an integer beyond 2**53 against a float: numpy would round the integer first
    inexact = (ba is None) != (bb is None) and max(x for x in (ba, bb) if x is not None) > _EXACT_FLOAT and not (
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
