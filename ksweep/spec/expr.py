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
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ExprError


def _is_pow2(x):
    return isinstance(x, (int, np.integer)) and x > 0 and (x & (x - 1)) == 0


def _cdiv(a, b):
    return -(-a // b)


def _round_up(a, m):
    return _cdiv(a, m) * m


# name -> (scalar implementation, vector implementation)
def _v_minmax(fn):
    def impl(*args):
        if len(args) == 1:
            raise ExprError("min()/max() take two or more arguments, not a sequence")
        out = args[0]
        for a in args[1:]:
            out = fn(out, a)
        return out

    return impl


def _v_is_pow2(x):
    x = np.asarray(x)
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
_DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)
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
        try:
            return eval(self.code, scope, _ScalarEnv(env))  # noqa: S307 - tree is whitelisted
        except ExprError:
            raise
        except ZeroDivisionError:
            raise ExprError(f"division by zero in '{self.source}' for {_describe(env, self.names)}") from None
        except NameError as exc:
            raise ExprError(f"unknown name in '{self.source}': {exc}") from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise ExprError(f"'{self.source}' failed for {_describe(env, self.names)}: {exc}") from None

    def evaluate_vec(self, env: Mapping[str, Any], n: int) -> np.ndarray:
        """Evaluate on ``n`` configurations at once; env values are arrays of length n or scalars."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = _Vec(env, n, self.source).eval(self.tree.body)
        out = np.asarray(out)
        if out.ndim == 0:
            out = np.full(n, out[()])
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
            parts.append(f"{name}={env[name]!r}")
        except KeyError:
            pass
    return ", ".join(parts) or "this configuration"


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
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"syntax error in '{text}': {exc.msg}") from None
    for node in ast.walk(tree):
        if type(node) in _REFUSED:
            raise ExprError(f"{_REFUSED[type(node)]}: '{text}'")
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"'{type(node).__name__}' is not allowed in expressions: '{text}'")
        if isinstance(node, ast.Name):
            if node.id.startswith("__"):
                raise ExprError(f"dunder names such as '{node.id}' are not allowed: '{text}'")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                called = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                raise ExprError(
                    f"function '{called}' is not allowed (allowed: {', '.join(sorted(FUNCTIONS))}): '{text}'"
                )
            if node.keywords:
                raise ExprError(f"keyword arguments are not allowed: '{text}'")
        elif isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)):
                    if not isinstance(right, (ast.Tuple, ast.List)) or not all(
                        isinstance(e, ast.Constant) or _is_negative_constant(e) for e in right.elts
                    ):
                        raise ExprError(f"'in' needs a literal tuple of constants on its right: '{text}'")
                elif not type(op) in _CMPOPS:
                    raise ExprError(f"'{type(op).__name__}' comparisons are not allowed: '{text}'")
        elif isinstance(node, (ast.Tuple, ast.List)):
            pass  # only reachable as the right side of 'in' (checked above) or refused at eval
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool)) or node.value is None:
                raise ExprError(f"constant {node.value!r} is not allowed: '{text}'")
    _check_tuples_only_after_in(tree.body, text)
    names = _names_used_as_values(tree)
    code = compile(tree, "<expr>", "eval")
    return Expr(source=text, names=frozenset(names), tree=tree, code=code)


def _is_negative_constant(node) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)


def _names_used_as_values(tree) -> set[str]:
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def _check_tuples_only_after_in(node, text: str) -> None:
    if isinstance(node, (ast.Tuple, ast.List)):
        raise ExprError(f"tuples and lists are only allowed after 'in': '{text}'")
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


class _Vec:
    """Evaluates a checked tree over numpy arrays of configurations."""

    def __init__(self, env: Mapping[str, Any], n: int, source: str):
        self.env = env
        self.n = n
        self.source = source

    def eval(self, node):
        method = getattr(self, "_" + type(node).__name__)
        return method(node)

    def _Constant(self, node):
        return node.value

    def _Name(self, node):
        try:
            return self.env[node.id]
        except KeyError:
            raise ExprError(f"unknown name '{node.id}' in '{self.source}'") from None

    def _BinOp(self, node):
        left = self.eval(node.left)
        right = self.eval(node.right)
        if isinstance(node.op, _DIVISIONS):
            zero = np.asarray(right) == 0
            if np.any(zero):
                raise ExprError(f"division by zero in '{self.source}'{self._example(zero)}")
        if isinstance(node.op, ast.Pow):
            left = _as_float_if_negative_exponent(left, right)
        return _BINOPS[type(node.op)](left, right)

    def _UnaryOp(self, node):
        v = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return np.logical_not(v)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        return ~v

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
        return result

    def _Compare(self, node):
        left = self.eval(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                choices = [_literal(e) for e in right_node.elts]
                part = np.isin(np.asarray(left), np.asarray(choices, dtype=object if _mixed(choices) else None))
                if isinstance(op, ast.NotIn):
                    part = ~part
                right = None
            else:
                right = self.eval(right_node)
                part = _CMPOPS[type(op)](left, right)
            part = np.asarray(part)
            result = part if result is None else (result & part)
            left = right
        return result

    def _IfExp(self, node):
        cond = _truth(self.eval(node.test), self.n)
        if cond.all():
            return self.eval(node.body)
        if not cond.any():
            return self.eval(node.orelse)
        yes = np.asarray(self._on_rows(node.body, cond))
        no = np.asarray(self._on_rows(node.orelse, ~cond))
        out = np.empty(self.n, dtype=np.result_type(yes, no))
        out[cond] = yes
        out[~cond] = no
        return out

    def _Call(self, node):
        fn = FUNCTIONS[node.func.id][1]
        args = [self.eval(a) for a in node.args]
        try:
            return fn(*args)
        except TypeError as exc:
            raise ExprError(f"bad call in '{self.source}': {exc}") from None

    def _Tuple(self, node):
        raise ExprError(f"tuples are only allowed after 'in': '{self.source}'")

    _List = _Tuple

    def _on_rows(self, node, mask: np.ndarray):
        """Evaluate ``node`` only on the rows where mask is true."""
        count = int(mask.sum())
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        sub = {}
        for name in used:
            if name in FUNCTIONS and name not in self.env:
                continue
            value = self._Name(ast.Name(id=name))
            arr = np.asarray(value)
            sub[name] = arr[mask] if arr.ndim == 1 and arr.shape[0] == self.n else value
        out = _Vec(sub, count, self.source).eval(node)
        out = np.asarray(out)
        return np.full(count, out[()]) if out.ndim == 0 else out

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
                parts.append(f"{name}={arr[row].item()!r}")
        return f" for {', '.join(parts)}" if parts else ""


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
    if e.dtype.kind in "iu" and np.any(e < 0):
        return np.asarray(base, dtype=np.float64)
    return base
