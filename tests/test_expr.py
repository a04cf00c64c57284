import math

import numpy as np
import pytest

from ksweep.errors import ExprError
from ksweep.spec.expr import parse


@pytest.mark.parametrize(
    "source, env, expected",
    [
        ("A // B + A % B", {"A": 17, "B": 5}, 3 + 2),
        ("2 ** N", {"N": 10}, 1024),
        ("(X + 127) & ~127", {"X": 300}, 384),
        ("X << 2 | 1", {"X": 3}, 13),
        ("X >> 1 ^ 1", {"X": 8}, 5),
        ("1 < X <= 4", {"X": 4}, True),
        ("1 < X <= 4", {"X": 5}, False),
        ("not X > 1 and Y or Z", {"X": 0, "Y": True, "Z": False}, True),
        ("X in (4, 8)", {"X": 8}, True),
        ("X not in (4, 8)", {"X": 8}, False),
        ("V in ('uint2', 'uint4')", {"V": "uint4"}, True),
        ("A if B > 0 else -A", {"A": 3, "B": -1}, -3),
        ("min(A, B, 7) + max(A, B)", {"A": 3, "B": 9}, 12),
        ("abs(A) + ceil(A / 2) + floor(2.5)", {"A": -3}, 3 + -1 + 2),
        ("log2(X)", {"X": 64}, 6.0),
        ("is_pow2(X) and not is_pow2(Y)", {"X": 64, "Y": 96}, True),
        ("cdiv(X, 128) + round_up(X, 128)", {"X": 129}, 2 + 256),
    ],
)
def test_scalar_and_vector_agree(source, env, expected):
    e = parse(source)
    assert e.evaluate(env) == expected
    vec_env = {k: np.array([v, v]) for k, v in env.items()}
    out = e.evaluate_vec(vec_env, 2)
    assert out.shape == (2,)
    assert out[0] == expected and out[1] == expected


@pytest.mark.parametrize(
    "source, fragment",
    [
        ("__import__('os').system('true')", "not allowed"),
        ("X.__class__", "attribute access"),
        ("(lambda: 1)()", "lambda"),
        ("__builtins__", "dunder"),
        ("open('f')", "function 'open' is not allowed"),
        ("X[0]", "subscripts"),
        ("[x for x in Y]", "comprehensions"),
        ("eval('1')", "function 'eval' is not allowed"),
        ("X in Y", "literal tuple"),
        ("(1, 2)", "only allowed after 'in'"),
        ("(y := 3)", "assignment"),
        ("X +", "syntax error"),
        ("", "empty"),
        ("max(X, key=Y)", "keyword"),
    ],
)
def test_refused(source, fragment):
    with pytest.raises(ExprError, match=None) as info:
        parse(source)
    assert fragment in str(info.value)


def test_names_exclude_functions():
    assert parse("max(A, B) + ceil(C)").names == {"A", "B", "C"}


def test_short_circuit_in_vector_mode_avoids_division_by_zero():
    e = parse("X != 0 and Y % X == 0")
    out = e.evaluate_vec({"X": np.array([0, 2, 3]), "Y": np.array([4, 4, 4])}, 3)
    assert out.tolist() == [False, True, False]
    e = parse("Y // X if X > 0 else -1")
    assert e.evaluate_vec({"X": np.array([0, 2]), "Y": np.array([4, 4])}, 2).tolist() == [-1, 2]


def test_division_by_zero_names_the_values():
    with pytest.raises(ExprError, match="division by zero.*X=0"):
        parse("Y // X").evaluate({"X": 0, "Y": 1})
    with pytest.raises(ExprError, match="division by zero.*X=0"):
        parse("Y % X").evaluate_vec({"X": np.array([1, 0]), "Y": np.array([1, 1])}, 2)


def test_unknown_name_at_evaluation():
    with pytest.raises(ExprError, match="unknown name"):
        parse("Q + 1").evaluate({})


def test_true_division_and_math():
    assert math.isclose(parse("sqrt(X) / 2").evaluate({"X": 16}), 2.0)
