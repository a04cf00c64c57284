"""The operations of the expression language (``expr.py``), shared by its two evaluators:
the checked ones that keep an expression within its limits (integers of at most
MAX_INT_BITS bits from ``*``, ``**`` and ``<<``, a shift by at most MAX_INT_BITS bits,
strings of at most MAX_STR_LEN characters from ``str * n``), the whitelisted functions
(each a scalar and a vector implementation), and the operator tables."""

from __future__ import annotations

import ast
import math
from typing import Callable

import numpy as np

from ..errors import ExprError

MAX_SOURCE_CHARS = 10_000
MAX_DEPTH = 100
MAX_INT_BITS = 4096
MAX_STR_LEN = 10_000

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)
EXACT_FLOAT = 2**53  # integers up to this magnitude are exact as float64


# -- checked operations: the limits on integer size and string length -------------------


def shown(x) -> str:
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


def bare_error(message: str) -> ExprError:
    """An error of one operation; the evaluator adds the expression and the values."""
    exc = ExprError(message)
    exc.bare = True
    return exc


def _int_limit(value, what: str):
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise bare_error(f"{what} has more than {MAX_INT_BITS} bits (the limit of integers in expressions)")
    return value


def _pow(a, b):
    ia, ib = _int(a), _int(b)
    if ia is None or ib is None:
        return a**b
    if ib > 0 and abs(ia) > 1 and (ib > MAX_INT_BITS or (abs(ia).bit_length() - 1) * ib > MAX_INT_BITS):
        raise bare_error(f"{shown(ia)} ** {shown(ib)} has more than {MAX_INT_BITS} bits "
                         "(the limit of integers in expressions)")
    return _int_limit(ia**ib, f"{shown(ia)} ** {shown(ib)}")


def _lshift(a, b):
    ia, ib = _int(a), _int(b)
    if ia is None or ib is None:
        return a << b
    if ia != 0 and ib > MAX_INT_BITS:
        raise bare_error(f"{shown(ia)} << {shown(ib)} shifts by more than {MAX_INT_BITS} bits "
                         "(the limit of integers in expressions)")
    return _int_limit(ia << ib, f"{shown(ia)} << {shown(ib)}")


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
            raise bare_error(f"{shown(text)} * {shown(k)} makes a string longer than {MAX_STR_LEN} characters "
                             "(the limit of strings in expressions)")
        return a * b
    ia, ib = _int(a), _int(b)
    if ia is None or ib is None:
        return a * b
    return _int_limit(ia * ib, f"{shown(ia)} * {shown(ib)}")


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
            raise bare_error("min()/max() take two or more arguments, not a sequence")
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

BINOPS = {
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
SCALAR_BINOPS = {**BINOPS, ast.Mult: _mul, ast.Pow: _pow, ast.LShift: _lshift, ast.RShift: _rshift}
# Operators that the scalar evaluator's compiled code calls as checked functions.
GUARDED = {ast.Pow: "__ks_pow", ast.LShift: "__ks_lshift", ast.Mult: "__ks_mul"}
GUARD_FUNCTIONS = {"__ks_pow": _pow, "__ks_lshift": _lshift, "__ks_mul": _mul}
DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)
BITOPS = (ast.BitAnd, ast.BitOr, ast.BitXor)
CMPOPS = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def shortened(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
