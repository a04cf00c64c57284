import math
import random
import re

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


# -- limits: nothing an expression says can hang ksweep or exhaust its memory ------------

DEEP = 100_000


@pytest.mark.parametrize("source, fragment", [
    ("(" * DEEP + "1" + ")" * DEEP, "more than the limit of 10000"),
    ("-" * DEEP + "1", "more than the limit of 10000"),
    ("1+(" * DEEP + "1" + ")" * DEEP, "more than the limit of 10000"),
    ("+".join(["1"] * DEEP), "more than the limit of 10000"),
    ("-" * 9_000 + "1", "nested more than 100 levels"),
    ("~" * 500 + "X", "nested more than 100 levels"),
    ("1+(" * 2_000 + "1" + ")" * 2_000, "nested more than 100 levels"),
    ("+".join(["1"] * 4_000), "nested more than 100 levels"),
    ("(" * 300 + "1" + ")" * 300, "nested more than 100 levels"),
    ("1" * 5_000, "syntax error"),
    ("2" + "0" * 1300, "more than 4096 bits"),
])
def test_huge_or_deep_expressions_are_refused(source, fragment):
    with pytest.raises(ExprError) as info:
        parse(source)
    message = str(info.value)
    assert fragment in message and "\n" not in message and len(message) < 400


def test_the_limits_leave_room():
    assert parse("+".join(["X"] * 100)).evaluate({"X": 1}) == 100
    assert parse("(" * 99 + "X" + ")" * 99).evaluate({"X": 1}) == 1
    assert parse("2 ** 4095 > 0").evaluate({}) is True
    assert parse("1 << 4095 > 0").evaluate({}) is True
    assert len(parse("'ab' * 5000").evaluate({})) == 10_000


@pytest.mark.parametrize("source, env, fragment", [
    ("9**9**9", {}, "9 ** 387420489 has more than 4096 bits"),
    ("1 << 10**12", {}, "1 << 1000000000000 shifts by more than 4096 bits"),
    ("'x' * 10**10", {}, "makes a string longer than 10000 characters"),
    ("10**10 * 'x'", {}, "makes a string longer than 10000 characters"),
    ("X ** Y", {"X": 3, "Y": 10**6}, "3 ** 1000000 has more than 4096 bits"),
    ("X << Y", {"X": 1, "Y": 10**12}, "shifts by more than 4096 bits"),
    ("S * Y", {"S": "ab", "Y": 10**12}, "makes a string longer"),
    ("(2 ** 4000) * (2 ** 4000)", {}, "has more than 4096 bits"),
])
def test_huge_results_fail_with_one_line_in_both_evaluators(source, env, fragment):
    e = parse(source)
    with pytest.raises(ExprError, match=re.escape(fragment)):
        e.evaluate(env)
    vec = {k: np.array([v, v]) for k, v in env.items()}
    with pytest.raises(ExprError, match=re.escape(fragment)) as info:
        e.evaluate_vec(vec, 2)
    assert "\n" not in str(info.value)
    if env:
        assert f"Y={env['Y']}" in str(info.value)  # the values of the row that failed


# -- exact integers: int64 must never wrap silently ---------------------------------------

EXACT = [
    "A * B * C * D < 2**62", "A * B > 0", "A + B > 0", "A - B < 0", "-A < 0", "abs(A) > 0",
    "A ** 3 > 0", "A << 40 > 0", "A >> 70 == 0", "A // -1 > 0", "A % -1 == 0", "cdiv(A, 3) > 0",
    "round_up(A, 7) > A", "A * 1.0 == A", "A == 2**63", "A < 2**64", "A / B > 0",
    "(A > 0) + (B > 0) == 2", "F + F == 2", "~F == -2", "-F == -1", "ceil(A) == A",
    "A in (1180591620717411303424, 1)", "max(A, 2**70) > 2**69", "min(A, B) * 2 < 0",
    "A if A > 10 else B * B", "A & -1 == A", "int(A * 0.5) >= 0", "is_pow2(F)", "A * A * A",
    "(A * A) // (B * B)", "V + V == 'abab'", "1 if V == 'ab' else V", "V * 3",
]
VALUES = {"A": [2**16, 2**40, -(2**63), 2**63 - 1, 3, -5, 0, 2**31], "B": [2**16, 2**30, -1, 2**62, 7],
          "C": [2**16, 3], "D": [2**16, -2], "F": [True, False], "V": ["ab", "c"]}


@pytest.mark.parametrize("source", EXACT)
def test_vector_results_equal_python_where_int64_would_wrap(source):
    e = parse(source)
    rng = random.Random(source)
    rows = [{k: rng.choice(v) for k, v in VALUES.items()} for _ in range(200)]
    expected = [e.evaluate(r) for r in rows]
    env = {k: np.array([r[k] for r in rows], dtype=np.int64 if k in "ABCD" else None) for k in VALUES}
    assert e.evaluate_vec(env, len(rows)).tolist() == expected


def test_a_product_beyond_int64_keeps_the_valid_config():
    from ksweep import Space

    # 2**40 * 2**30 wraps to 0 in int64: the config would have been pruned
    assert {"A": 2**40, "B": 2**30} in Space({"A": [2**40, 3], "B": [2**30, 5]}, ["A * B > 0"])
    # 2**64 wraps to 0 < 2**62: the config would have been kept
    s = Space({"A": [2**16, 2], "B": [2**16], "C": [2**16], "D": [2**16]}, ["A * B * C * D < 2**62"])
    assert list(s) == [{"A": 2, "B": 2**16, "C": 2**16, "D": 2**16}]
    assert len(Space({"A": [2**70, 1]}, ["A > 2**69"], derived={"X": "A * 2"})) == 1


def test_a_long_chain_of_derived_values():
    chain = {f"D{i}": (f"D{i - 1} + 1" if i else "A") for i in range(3000)}
    from ksweep import Space

    assert list(Space({"A": [1, 2]}, ["D2999 > 3000"], derived=chain)) == [{"A": 2}]
