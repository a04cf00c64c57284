"""One kernel-mode config checked in a fresh process: what the hardening of the leaders runs
(sweep/hardening.py, through ``KernelMode.harden_program``).

    python -m ksweep.kernel.harden_one [--backend cuda|fake:MODULE.py] REQUEST.json

The request holds the worker's ``setup`` (the shape's inputs, the tolerances, a Python
reference), the config's ``launch`` (cubin, entry, grid, block, smem, params), the
reference config's launch where the reference is a config (``reference``), ``checks`` and
``special``. Every checked launch has its outputs poisoned first (0xFF bytes: NaN).

- ``checks = "sanitize"``: one checked launch on the check inputs, what each of
  compute-sanitizer's tools runs (10-100 times slower: no timing, one launch); its outputs
  compared with a Python reference's (a reference config is not launched under the tool:
  its faults are not the config's).
- ``checks = "inputs"``: the check inputs; the second draw's values written over them at the
  same addresses (a kernel that keeps outputs keyed by its inputs' addresses answers the
  first draw's); the check inputs at a second set of addresses (a fresh allocation); and each
  set of special values ``special`` lists (kernel/inputs.special_draw), each compared with
  the reference's outputs for it, its ``atol`` scaled by how much larger those outputs are
  than the check inputs' (``scale``: the rounding of the large set's sums is as much larger),
  at most by the square of how much larger its inputs are.

It prints one JSON line: ``{"ok": true, "failed": null | "<input set>: <mismatch>", "checked":
[...], "skipped": [...]}``, or ``{"ok": false, "error": ...}`` (with ``cuda_error`` for a
CUDA error); it exits 0 when every check passed, 1 when one failed, 2 on an error. Facts,
not a status: verify/sanitizer.inputs_verdict judges them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from .args import compare
from .backend import CudaBackend, CudaError, DeviceArray, FakeBackend
from .inputs import host_setup, python_reference, special_draw
from .worker import POISON_BYTE, Worker

SAME_ADDRESSES = "the second draw at the first draw's addresses"
OTHER_ADDRESSES = "the inputs at other addresses"


def largest(arrays) -> float:
    """The largest finite magnitude of the floating-point arrays among ``arrays`` (0: none)."""
    finite = [np.abs(a[np.isfinite(a)]).max() for a in arrays if isinstance(a, np.ndarray) and a.size
              and np.issubdtype(a.dtype, np.floating) and np.isfinite(a).any()]
    return float(max(finite, default=0.0))


def scale(outputs: float, usual: float, inputs: float, usual_inputs: float) -> float:
    """How many times larger a set's outputs are than the usual draw's (each the ``largest``
    magnitude over every output), at least 1, and at most the square of how many times larger
    its inputs are than the usual ones (a product of two of them: an output near zero on the
    usual draw makes no tolerance unbounded; the "ones" set, none larger, gets none)."""
    grown = inputs / usual_inputs if usual_inputs > 0 else 1.0
    ratio = outputs / usual if usual > 0 else 1.0
    return max(1.0, min(ratio, grown * grown))


class Checks:
    def __init__(self, backend, req: dict):
        self.b, self.req = backend, req
        self.setup = {**req["setup"], "energy": None,
                      "timing": {**req["setup"].get("timing", {}), "flush_l2": False}}

    def run(self) -> dict:
        host = host_setup(self.setup)
        w = self.w = Worker(self.b)
        w.setup(self.setup, host)
        self.outputs = host.outputs
        ref = python_reference(self.setup)
        check, check2 = host.args["check"], host.args["check2"]
        if self.req.get("checks") == "sanitize":
            sets = [("the check inputs", check, host.expected[0], "check")]
        else:
            sets = [("the check inputs", check, host.expected[0], "check"),
                    (SAME_ADDRESSES, check2, host.expected[1], "check"),
                    (OTHER_ADDRESSES, check, host.expected[0], None)]
            sets += [(f"{kind} inputs", special_draw(check, self.outputs, kind), None, None)
                     for kind in self.req.get("special", ())]
        cmem = host.cmem.get("check", {})
        skipped: list[str] = []
        expected = {}
        reference_launch = self.req.get("reference") if self.req.get("checks") != "sanitize" else None
        if reference_launch is not None:
            self._load(reference_launch)
            for name, args, _, _ in sets:
                expected[name] = [self._download(g) for g in self._launch(self._place(args, None))]
        for name, args, made, _ in sets:
            if name in expected:
                continue
            if made is not None:
                expected[name] = made
            elif ref is not None:
                expected[name] = ref(args, cmem)
            else:  # no reference to compare with: launched (a sanitizer still watches it), not compared
                skipped.append(name)
        self._load(self.req["launch"])
        checked = []
        special = {f"{kind} inputs" for kind in self.req.get("special", ())}
        usual = largest(expected.get("the check inputs", ())), largest(check)
        for name, args, _, where in sets:
            got = self._launch(self._place(args, where))
            if name not in expected:
                continue
            # a special set's outputs on another scale (large inputs): atol, the error the check
            # accepts on the usual draw's outputs, scales with them, as a float sum's rounding does
            atol = w.atol * (scale(largest(expected[name]), usual[0], largest(args), usual[1])
                             if name in special else 1.0)
            mismatch = compare([self._download(g) for g in got], expected[name], atol, w.rtol)
            checked.append(name)
            if mismatch:
                return {"ok": True, "failed": f"{name}: {mismatch}", "checked": checked, "skipped": skipped}
        return {"ok": True, "failed": None, "checked": checked, "skipped": skipped}

    def _load(self, launch: dict) -> None:
        self.b.set_config(launch.get("params", {}))
        self.fn = self.w._load(launch)
        self.launch = launch
        self.w._copy_symbols("check")

    def _place(self, args: list, where: str | None) -> list:
        """The arguments on the device: written into the buffers of input set ``where`` (the
        same addresses), or into a fresh allocation (None)."""
        if where is None:
            return self.w._upload(args)
        dev = self.w.dev[where]
        for a, d in zip(args, dev):
            if isinstance(d, DeviceArray):
                self.b.upload(d.ptr, np.ascontiguousarray(a))
        return dev

    def _launch(self, dev: list) -> list:
        for i in self.outputs:
            self.b.fill(dev[i].ptr, POISON_BYTE, dev[i].nbytes)
        self.b.launch(self.fn, self.launch["grid"], self.launch["block"], int(self.launch.get("smem", 0)), dev)
        self.b.sync()
        return [dev[i] for i in self.outputs]

    def _download(self, array: DeviceArray) -> np.ndarray:
        return self.w._download(array)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ksweep-harden-one")
    p.add_argument("--backend", default="cuda", help="cuda, or fake:MODULE.py")
    p.add_argument("request")
    a = p.parse_args(argv)
    # the answer owns the real stdout; what the user's functions print goes to stderr
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        with open(a.request) as f:
            req = json.load(f)
        backend = FakeBackend(a.backend[5:]) if a.backend.startswith("fake:") else CudaBackend(0, gpu_checks=False)
        answer = Checks(backend, req).run()
    except CudaError as exc:
        answer = {"ok": False, "error": str(exc), "cuda_error": exc.name}
    except Exception as exc:  # noqa: BLE001 - said as data: the parent judges
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    proto.write(json.dumps(answer) + "\n")
    proto.flush()
    if not answer.get("ok"):
        return 2
    return 1 if answer.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
