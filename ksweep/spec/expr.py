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

This module parses and checks, and evaluates on one configuration; ``expr_ops.py`` holds
the operations both evaluators run (the checked ones, the functions), ``expr_vec.py`` the
vector evaluator.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import ExprError
from .expr_ops import (BINOPS, CMPOPS, GUARD_FUNCTIONS, GUARDED, FUNCTIONS, MAX_DEPTH, MAX_INT_BITS,
                       MAX_SOURCE_CHARS, MAX_STR_LEN, shortened, shown)
from .expr_vec import Vectorised

__all__ = ["Expr", "ExprError", "FUNCTIONS", "MAX_DEPTH", "MAX_INT_BITS", "MAX_SOURCE_CHARS", "MAX_STR_LEN", "parse"]


_ALLOWED = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Call, ast.Name, ast.Constant, ast.Tuple, ast.List, ast.Load,
    ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Invert,
    ast.In, ast.NotIn, *BINOPS, *CMPOPS,
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
        scope.update(GUARD_FUNCTIONS)
        try:
            return eval(self.code, scope, _ScalarEnv(env))  # noqa: S307 - tree is whitelisted
        except ExprError as exc:
            if not getattr(exc, "bare", False):
                raise
            raise ExprError(f"{exc} in '{shortened(self.source)}'{_for(env, self.names)}") from None
        except ZeroDivisionError:
            raise ExprError(f"division by zero in '{shortened(self.source)}' for "
                            f"{_describe(env, self.names)}") from None
        except NameError as exc:
            raise ExprError(f"unknown name in '{shortened(self.source)}': {exc}") from None
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ExprError(f"'{shortened(self.source)}' failed for {_describe(env, self.names)}: {exc}") from None
        except (MemoryError, RecursionError):
            raise ExprError(f"'{shortened(self.source)}' is too large to evaluate") from None

    def evaluate_vec(self, env: Mapping[str, Any], n: int) -> np.ndarray:
        """Evaluate on ``n`` configurations at once; env values are arrays of length n or scalars."""
        bounds = getattr(env, "int_bounds", None)
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out = Vectorised(env, n, self.source, bounds).eval(self.tree.body)
        except ExprError as exc:
            if not getattr(exc, "bare", False):
                raise
            raise ExprError(f"{exc} in '{shortened(self.source)}'") from None
        except ZeroDivisionError:
            raise ExprError(f"division by zero in '{shortened(self.source)}'") from None
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ExprError(f"'{shortened(self.source)}' failed: {exc}") from None
        except (MemoryError, RecursionError):
            raise ExprError(f"'{shortened(self.source)}' is too large to evaluate") from None
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
            parts.append(f"{name}={shown(env[name])}")
        except KeyError:
            pass
    return ", ".join(parts) or "this configuration"


def _for(env: Mapping[str, Any], names) -> str:
    return f" for {_describe(env, names)}" if names else ""


def _first_line(message) -> str:
    return str(message).strip().splitlines()[0] if str(message).strip() else "invalid syntax"


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
                        f"split it into derived values: '{shortened(text, 60)}'")
    too_deep = (f"the expression is nested more than {MAX_DEPTH} levels deep: split it into derived values: "
                f"'{shortened(text, 60)}'")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        if "too many nested" in str(exc.msg):
            raise ExprError(too_deep) from None
        raise ExprError(f"syntax error in '{shortened(text, 80)}': {_first_line(exc.msg)}") from None
    except (RecursionError, MemoryError):
        raise ExprError(too_deep) from None
    except ValueError as exc:  # e.g. a null character
        raise ExprError(f"syntax error in '{shortened(text, 80)}': {_first_line(exc)}") from None
    if _depth(tree) > MAX_DEPTH:
        raise ExprError(f"the expression is nested more than {MAX_DEPTH} levels deep (a sum of more than "
                        f"{MAX_DEPTH} terms counts as that deep): split it into derived values: "
                        f"'{shortened(text, 60)}'")
    for node in ast.walk(tree):
        if type(node) in _REFUSED:
            raise ExprError(f"{_REFUSED[type(node)]}: '{shortened(text)}'")
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"'{type(node).__name__}' is not allowed in expressions: '{shortened(text)}'")
        if isinstance(node, ast.Name):
            if node.id.startswith("__"):
                raise ExprError(f"dunder names such as '{node.id}' are not allowed: '{shortened(text)}'")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                called = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                raise ExprError(
                    f"function '{called}' is not allowed (allowed: {', '.join(sorted(FUNCTIONS))}): '{shortened(text)}'"
                )
            if node.keywords:
                raise ExprError(f"keyword arguments are not allowed: '{shortened(text)}'")
        elif isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)):
                    if not isinstance(right, (ast.Tuple, ast.List)) or not all(
                        isinstance(e, ast.Constant) or _is_negative_constant(e) for e in right.elts
                    ):
                        raise ExprError(f"'in' needs a literal tuple of constants on its right: '{shortened(text)}'")
                elif not type(op) in CMPOPS:
                    raise ExprError(f"'{type(op).__name__}' comparisons are not allowed: '{shortened(text)}'")
        elif isinstance(node, (ast.Tuple, ast.List)):
            pass  # only reachable as the right side of 'in' (checked above) or refused at eval
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, str, bool)) or node.value is None:
                raise ExprError(f"constant {node.value!r} is not allowed: '{shortened(text)}'")
            if isinstance(node.value, int) and node.value.bit_length() > MAX_INT_BITS:
                raise ExprError(f"the constant {shown(node.value)} has more than {MAX_INT_BITS} bits "
                                f"(the limit of integers in expressions): '{shortened(text, 60)}'")
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
        name = GUARDED.get(type(node.op))
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
        raise ExprError(f"tuples and lists are only allowed after 'in': '{shortened(text)}'")
    if isinstance(node, ast.Compare):
        _check_tuples_only_after_in(node.left, text)
        for op, right in zip(node.ops, node.comparators):
            if not isinstance(op, (ast.In, ast.NotIn)):
                _check_tuples_only_after_in(right, text)
        return
    for child in ast.iter_child_nodes(node):
        _check_tuples_only_after_in(child, text)
