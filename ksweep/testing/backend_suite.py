"""The conformance tests of a kernel-mode backend's checks (the contract in kernel/backend.py).

A backend compares an output with its reference where they lie (``check_output``) and
counts the bytes an input lost (``differing_bytes``); whatever it runs on, its answer must be
the one numpy gives (``ksweep.kernel.args.check_output``), and so must the message made of
it. Subclass ``BackendSuite`` in a test module and give it a ``backend`` fixture::

    from ksweep.testing.backend_suite import BackendSuite

    class TestMyBackend(BackendSuite):
        @pytest.fixture
        def backend(self):
            return MyBackend(...)

Each case also says what numpy must find (``Case.want``), so a wrong answer shared by both
sides fails too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

from ..kernel.args import CHUNK, check_output, compare, work_dtype
from ..kernel.backend import DeviceArray


@dataclass(frozen=True)
class Case:
    got: np.ndarray
    expected: np.ndarray
    atol: float = 1e-6
    rtol: float = 0.0
    want: dict = field(default_factory=dict)  # OutputCheck fields (or "ok") numpy must give


def _normal(n: int, dtype=np.float32, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def _with(a: np.ndarray, **at) -> np.ndarray:
    """A copy of ``a`` with elements set: ``_with(a, i5=1.0)`` sets a[5]."""
    out = a.copy()
    for key, value in at.items():
        out[int(key[1:])] = value
    return out


def _float_cases() -> dict[str, Callable[[], Case]]:
    e = _normal(1000)
    ties = _with(e, i10=1.0, i500=1.0)
    ref_nan = _with(e, i3=np.nan)
    f64 = _normal(777, np.float64)
    return {
        "equal": lambda: Case(e.copy(), e, want={"ok": True}),
        "within_rtol": lambda: Case(e * np.float32(1 + 1e-4), e, 0.0, 1e-3, {"ok": True}),
        "one_off_last": lambda: Case(_with(e, i999=e[999] + 1), e, 1e-3, 0.0, {"over": 1, "worst": 999,
                                                                              "unwritten": 0}),
        "ties_give_the_first": lambda: Case(_with(ties, i10=3.0, i500=3.0), ties, want={"over": 2, "worst": 10,
                                                                                       "max_err": 2.0}),
        "nan_written": lambda: Case(_with(e, i7=np.nan), e, want={"unwritten": 1, "first_unwritten": 7, "over": 0}),
        "inf_written": lambda: Case(_with(e, i999=np.inf, i3=-np.inf), e, want={"unwritten": 2,
                                                                                "first_unwritten": 3}),
        "unwritten_and_off": lambda: Case(_with(e, i9=np.nan, i2=e[2] + 1), e, want={"unwritten": 1, "over": 1,
                                                                                    "worst": 2}),
        "reference_nan_matched": lambda: Case(ref_nan.copy(), ref_nan, want={"ok": True}),
        "reference_nan_hides_nothing": lambda: Case(_with(ref_nan, i4=ref_nan[4] + 1), ref_nan,
                                                    want={"over": 1, "worst": 4}),
        "reference_inf_not_judged": lambda: Case(_with(e, i5=0.0), _with(e, i5=np.inf), want={"ok": True}),
        "float64_reference": lambda: Case(e.copy(), e.astype(np.float64) + 1e-9, want={"ok": True}),
        "float64_reference_off": lambda: Case(_with(e, i2=e[2] + 0.01), e.astype(np.float64), 1e-3, 0.0,
                                              {"over": 1, "worst": 2}),
        "float64": lambda: Case(_with(f64, i500=f64[500] - 1e-3), f64, 1e-6, 1e-6, {"over": 1, "worst": 500}),
        "float64_within": lambda: Case(f64 * (1 + 1e-9), f64, 0.0, 1e-8, {"ok": True}),
        "empty": lambda: Case(np.zeros(0, np.float32), np.zeros(0, np.float32), want={"ok": True}),
    }


def _half_cases() -> dict[str, Callable[[], Case]]:
    h = _normal(500, np.float16)
    # zeros, the smallest subnormals, the largest normals, ones: every kind of half but NaN
    special = np.array([0.0, -0.0, 6e-8, -6e-8, 3e-5, 65504.0, -65504.0, 1.0, -1.0, 0.1], np.float16)
    return {
        "float16_off": lambda: Case(_with(h, i100=h[100] + np.float16(1)), h, 1e-3, 0.0, {"over": 1, "worst": 100}),
        "float16_nan": lambda: Case(_with(h, i20=np.nan), h, want={"unwritten": 1, "first_unwritten": 20}),
        "float16_special_equal": lambda: Case(special.copy(), special, 0.0, 0.0, {"ok": True}),
        "float16_subnormal_off": lambda: Case(_with(special, i2=0.0), special, 0.0, 0.0,
                                              {"over": 1, "worst": 2, "expected": float(special[2])}),
        "float16_inf_written": lambda: Case(_with(special, i5=np.inf), special, want={"unwritten": 1,
                                                                                      "first_unwritten": 5}),
    }


def _integer_cases() -> dict[str, Callable[[], Case]]:
    out: dict[str, Callable[[], Case]] = {}
    for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        e = (np.arange(100) % 100).astype(t)
        out[f"{t}_off"] = lambda e=e: Case(_with(e, i42=e[42] + 1), e, 0.5, 0.0, {"over": 1, "worst": 42,
                                                                                 "got": 43.0, "expected": 42.0})
        out[f"{t}_within_atol"] = lambda e=e: Case(_with(e, i42=e[42] + 1), e, 1.0, 0.0, {"ok": True})
    big = (2 ** 40 + np.arange(300)).astype(np.int64)
    ints = np.arange(1000, dtype=np.int32)
    out["int64_large"] = lambda: Case(_with(big, i9=big[9] + 3), big, 1.0, 0.0, {"over": 1, "worst": 9})
    out["int32_poisoned"] = lambda: Case(np.full(1000, -1, np.int32), ints, 1e-6, 0.0, {"over": 1000, "worst": 999,
                                                                                        "max_err": 1000.0})
    flags = np.arange(100) % 3 == 0
    out["bool_off"] = lambda: Case(_with(flags, i5=not flags[5]), flags, want={"over": 1, "worst": 5})
    out["bool_equal"] = lambda: Case(flags.copy(), flags, want={"ok": True})
    return out


def _large_cases() -> dict[str, Callable[[], Case]]:
    """Several of numpy's chunks (and many GPU threads): where the first and the worst are."""
    def large():
        e = _normal(2 * CHUNK + 3, seed=11)
        e[[CHUNK + 5, 2 * CHUNK + 1]] = 0.5
        e[0] = 1e6
        return e

    def off():
        e = large()
        g = _with(e, **{f"i{CHUNK + 5}": 1.5, f"i{2 * CHUNK + 1}": 1.5})
        g[0] = 1e6 + 50  # within rtol there, and still the largest error of all
        return Case(g, e, 1e-3, 1e-4, {"over": 2, "worst": CHUNK + 5, "max_err": 50.0})

    def unwritten():
        e = large()
        return Case(_with(e, **{f"i{2 * CHUNK + 2}": np.nan, f"i{CHUNK + 7}": np.nan}), e, 1e-3, 1e-4,
                    {"unwritten": 2, "first_unwritten": CHUNK + 7})

    return {"large_off": off, "large_unwritten": unwritten,
            "large_equal": lambda: Case(large(), large(), 1e-3, 1e-4, {"ok": True})}


CASES = {**_float_cases(), **_half_cases(), **_integer_cases(), **_large_cases()}


def put(backend, array: np.ndarray) -> DeviceArray:
    """``array`` copied into the backend's memory."""
    array = np.ascontiguousarray(array)
    ptr = backend.alloc(array.nbytes)
    if array.nbytes:
        backend.upload(ptr, array)
    return DeviceArray(ptr, array.dtype.name, array.shape, array.nbytes)


def put_reference(backend, got: np.ndarray, expected: np.ndarray) -> DeviceArray:
    """A reference as the worker keeps it: in the type its output is compared in."""
    return put(backend, np.asarray(expected, dtype=work_dtype(got.dtype, expected.dtype)))


class BackendSuite:
    """Conformance tests of a backend's checks; subclass with a ``backend`` fixture."""

    @pytest.fixture
    def backend(self):
        raise NotImplementedError("give the suite a backend fixture")

    @pytest.mark.parametrize("name", sorted(CASES))
    def test_check_output_is_numpys(self, backend, name):
        case = CASES[name]()
        host = check_output(case.got, case.expected, case.atol, case.rtol)
        for key, value in case.want.items():
            assert getattr(host, key) == value, f"{name}: numpy's {key} is {getattr(host, key)}, not {value}"
        got = backend.check_output(put(backend, case.got), put_reference(backend, case.got, case.expected),
                                   case.atol, case.rtol)
        assert got == host

    @pytest.mark.parametrize("name", ["one_off_last", "nan_written", "float16_subnormal_off", "int32_poisoned",
                                      "large_off", "reference_nan_hides_nothing"])
    def test_the_message_is_the_same(self, backend, name):
        case = CASES[name]()
        dev = [put(backend, case.got)], [put_reference(backend, case.got, case.expected)]
        message = compare(*dev, case.atol, case.rtol,
                          check=lambda g, e: backend.check_output(g, e, case.atol, case.rtol))
        assert message is not None and message == compare([case.got], [case.expected], case.atol, case.rtol)

    @pytest.mark.parametrize("dtype, poisoned", [("float32", "unwritten"), ("float64", "unwritten"),
                                                 ("float16", "unwritten"), ("int32", "over"), ("uint8", "over")])
    def test_a_poisoned_output_is_seen_after_the_fill(self, backend, dtype, poisoned):
        """The fill is queued before the check, which must wait for it: every element poisoned
        (0xFF bytes: NaN, or -1 / the largest unsigned) is caught."""
        e = (np.arange(3000) % 100).astype(dtype)
        got = put(backend, e)
        backend.fill(got.ptr, 0xFF, got.nbytes)
        r = backend.check_output(got, put_reference(backend, e, e), 1e-6, 0.0)
        assert getattr(r, poisoned) == e.size and r == check_output(np.full_like(e.view(np.uint8), 0xFF).view(dtype),
                                                                     e, 1e-6, 0.0)

    @pytest.mark.parametrize("nbytes", [1, 15, 16, 17, 61, 4096 + 7, 3 * (1 << 20) + 5])
    def test_differing_bytes(self, backend, nbytes):
        a = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
        pristine = put(backend, a)
        assert backend.differing_bytes(put(backend, a), pristine) == 0
        b = a.copy()
        where = sorted({0, nbytes // 2, nbytes - 1})
        b[where] ^= 0x10
        if nbytes >= 8:
            b[4:8] ^= 0x01  # four bytes of one word
        changed = put(backend, b)
        assert backend.differing_bytes(changed, pristine) == int(np.count_nonzero(a != b))
        backend.copy(changed.ptr, pristine.ptr, nbytes)  # restored
        assert backend.differing_bytes(changed, pristine) == 0
        back = np.empty_like(a)
        backend.download(changed.ptr, back)
        assert np.array_equal(back, a)
