"""The persistent GPU worker: ``python -m ksweep.kernel.worker --backend cuda``.

It speaks JSON lines on stdin/stdout (user code's prints go to stderr). Requests:

- ``{"op": "setup", "args": "file.py:fn", "root": DIR, "sizes": {...}, "seed": S,
  "outputs": [i, ...], "reference": "file.py:fn" | null, "atol": a, "rtol": r, "timing": {...}}``
  makes two input sets from the user's function (seed S for timing, S+1 for checking),
  uploads them, and computes the reference outputs of the check set when a Python
  reference is given (kept on the device, as a reference config's outputs are from their
  first use on). ``"cmem": "file.py:fn" | "npz:PATH" | null``: values of the module's
  ``__constant__`` and ``__device__`` variables (name -> array), made per input set like
  the arguments and copied into each loaded module before its launches on that set. It
  answers ``"checks": "gpu"`` or ``"host (why)"``: where outputs are compared, and
  ``"seconds"``: how long its host part, its device part and the wait for the comparison
  kernels took.
- ``{"op": "eval", "cubin": PATH, "entry": NAME, "grid": [..], "block": [..], "smem": N,
  "params": {...}, "capture": PATH | null, "reference_file": PATH | null}`` checks the
  kernel's outputs on the check set (outputs poisoned first; compared with the reference,
  or saved to ``capture`` when this config *is* the reference), then times it on the
  timing set with CUDA events: warm-up by time, repetitions by time, the L2 flushed
  before each timed launch. The checks run where the data is (the backend's
  ``check_output`` and ``differing_bytes``: on the GPU, the expected outputs and pristine
  copies of the inputs kept in its memory), so only their summaries are downloaded. It
  answers what happened, not a status (the parent judges: run/classify.classify_answer):
  ``{"ok": true, "outputs": "matched" | "captured" | "unchecked", "metrics": {...}}``, or
  ``{"ok": true, "outputs": "mismatched", "mismatch": "<how>", "metrics": {}}`` (a
  mismatched kernel is not timed). With ``"digest": true`` (the confirmation's runs) the
  metrics hold ``outputs_digest``, a digest of the first draw's outputs (verify/determinism.py).
  The setup's answer, and a capture's, hold ``"audit"``: why the comparison cannot tell a wrong
  output from a right one (kernel/audit.py), or null.

With ``"energy": {"duration_ms": D}`` in the setup (the energy observer), every timed config
also goes through an energy phase (``Worker._energy``): its launches back to back for about
D ms while the board's energy counter is read (NVML, through the backend's monitor), adding
``power_w``, ``energy_mj`` (per launch), ``energy_launches`` and ``energy_window_s`` to the
metrics. A GPU whose counter cannot be read fails the setup with ENERGY_UNAVAILABLE's words
(a failure of the host: run/environment.py).

The worker answers ``{"ok": true, "hello": "<GPU name>"}`` once CUDA is up, before any
answer. The parent sends the setup at once, without waiting for the hello: its host part
(``inputs.host_setup``: the inputs, the second draw, the Python reference) is made on a thread
while CUDA starts.

A request that raised answers ``{"ok": false, "error": "<what>"}``, with ``"cuda_error":
"<CUDA error name>"`` and ``"fatal": true|false`` when the CUDA driver reported it. After
an error that poisons the CUDA context (``"fatal": true``) the worker exits; the parent
starts a fresh one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
import traceback
from itertools import chain

import numpy as np

from ..run.gpu_state import ENERGY_UNAVAILABLE
from ..verify.determinism import DIGEST, digest_value
from .args import compare, precise_enough, summarise, work_dtype
from .audit import audit
from .backend import CudaBackend, CudaError, DeviceArray, FakeBackend
from .inputs import HostSetup, host_setup

POISON_BYTE = 0xFF  # NaN for floating outputs, -1 for integers
STATIC_SMEM_LIMIT = 48 * 1024  # shared memory a block gets without opting in (static + dynamic)
# The energy phase: batches of launches at least half this long between two reads of the
# counter (the GPU stays busy while the host reads), and the longest the counter may take to
# change before the phase gives up (NVML updates it every 20-100 ms on recent GPUs).
ENERGY_BATCH_S = 0.005
ENERGY_EDGE_S = 3.0
MAX_BATCH = 1 << 16
RACE_REPS = 3  # a raced config's first batch of timed launches


class SymbolError(Exception):
    """A cmem value that does not fit the module: no such variable, or too large for it."""


class EnergyUnavailable(Exception):
    """The energy observer cannot read this GPU's energy counter (every config would fail so)."""


class Worker:
    def __init__(self, backend):
        self.b = backend
        self.ready = False
        self.flush_ptr = None
        self.flush_bytes = 0
        self._refs: dict[str, tuple] = {}  # reference file -> expected outputs of each draw, on the device
        self._pristine: dict[int, DeviceArray] = {}  # input i of the check set -> an untouched copy of it
        self._events: list[tuple] = []  # CUDA event pairs of the timed launches, reused
        self.cmem: dict[str, dict[str, np.ndarray]] = {}  # input set -> symbol name -> value
        self._symbols_of: str | None = None  # the input set whose symbols the loaded module holds
        self.energy: dict | None = None  # the energy observer's settings ({"duration_ms": D}), when asked for
        self.meter = None  # the GPU monitor whose energy counter the energy phase reads
        self.meter_device: int | str = 0

    # -- setup ---------------------------------------------------------------------------
    def setup(self, req: dict, prepared: "HostSetup | BaseException | None" = None) -> dict:
        """Upload what ``host_setup`` made for ``req`` (``prepared``: made already, on another
        thread while CUDA started; an exception it raised is raised here)."""
        if isinstance(prepared, BaseException):
            raise prepared
        host = prepared or host_setup(req)
        t_start = time.perf_counter()
        self.outputs = host.outputs
        self.atol, self.rtol = float(req.get("atol", 1e-6)), float(req.get("rtol", 1e-5))
        self.timing = req.get("timing", {})
        self.host, self.cmem = host.args, host.cmem
        self.dev = {k: self._upload(v) for k, v in self.host.items()}
        # what the kernel must leave unchanged: a copy of each input of the check set, beside it
        for i, a in enumerate(self.dev["check"]):
            if i not in self.outputs and isinstance(a, DeviceArray):
                self._pristine[i] = DeviceArray(self.b.alloc(a.nbytes), a.dtype, a.shape, a.nbytes)
                self.b.copy(self._pristine[i].ptr, a.ptr, a.nbytes)
        self.expected, self.expected2 = (None if e is None else self._keep(e) for e in host.expected)
        if self.timing.get("flush_l2", True):
            self.flush_bytes = max(2 * int(self.b.l2_bytes), 1 << 20)
            self.flush_ptr = self.b.alloc(self.flush_bytes)
        self.energy = req.get("energy") or None
        if self.energy:
            self.meter, self.meter_device = self.b.monitor(), self.b.nvml_device
            if self.meter.energy_mj(self.meter_device) is None:
                raise EnergyUnavailable(f"{ENERGY_UNAVAILABLE}: no NVML (nvidia-ml-py and the NVIDIA driver) or no "
                                        "energy counter on this GPU (NVML has one from Volta on)")
        self.b.sync()
        t_device = time.perf_counter()
        where = self.b.checks_where()  # the comparison kernels built and loaded
        self.ready = True
        blind = audit(host.expected[0], host.expected[1], self.atol, self.rtol) if host.expected[0] is not None \
            else None
        return {"ok": True, "device": getattr(self.b, "name", ""), "checks": where, "audit": blind,
                "seconds": {"host": host.seconds, "device": t_device - t_start, "checks": time.perf_counter() - t_device}}

    def _upload(self, args: list) -> list:
        dev = []
        for a in args:
            if isinstance(a, np.ndarray):
                ptr = self.b.alloc(a.nbytes)
                self.b.upload(ptr, a)
                dev.append(DeviceArray(ptr, a.dtype.name, a.shape, a.nbytes))
            else:
                dev.append(a)
        return dev

    def _keep(self, expected: list) -> list:
        """Expected outputs on the device, each in the type it is compared in (args.work_dtype)."""
        kept = []
        for k, e in enumerate(expected):
            if e is None:
                kept.append(None)
                continue
            e = np.asarray(e)
            out = self.host["check"][self.outputs[k]] if k < len(self.outputs) else e
            kept.append(self._upload([np.ascontiguousarray(e, dtype=work_dtype(out.dtype, e.dtype))])[0])
        return kept

    def _download(self, array: DeviceArray) -> np.ndarray:
        host = np.empty(array.shape, array.dtype)
        self.b.download(array.ptr, host)
        return host

    # -- one config ----------------------------------------------------------------------
    def evaluate(self, req: dict) -> dict:
        if not self.ready:
            raise RuntimeError("eval before setup")
        self.b.set_config(req.get("params", {}))
        fn = self._load(req)
        grid, block, smem = req["grid"], req["block"], int(req.get("smem", 0))
        launch = lambda args: self.b.launch(fn, grid, block, smem, args)  # noqa: E731
        started = self.b.now()  # the checks' launches warm the GPU up too (see _time)
        bar = req.get("bar_ms")  # the best median so far, when this config may be raced (see _time)

        # correctness before timing: on two input draws from different distributions, outputs
        # poisoned first, inputs the kernel must not write checked unchanged (first draw)
        if req.get("capture"):  # this config is the reference: keep its outputs of both draws
            got = self._run_checked("check", launch, inputs=True)
            if isinstance(got, str):
                return {"ok": True, "outputs": "mismatched", "mismatch": got, "metrics": {}}
            got = [self._download(g) for g in got]
            second = [self._download(g) for g in self._run_checked("check2", launch)]
            np.savez(req["capture"], *got, *second)
            return {"ok": True, "outputs": "captured", "audit": audit(got, second, self.atol, self.rtol),
                    "metrics": self._measure(launch, self._since(started), bar)}
        expected = self._reference(req.get("reference_file"))
        if expected is None:  # nothing compares the outputs: not poisoned (an index array stays valid)
            got = self._run_checked("check", launch, inputs=True, poison=False)
            if isinstance(got, str):
                return {"ok": True, "outputs": "mismatched", "mismatch": got, "metrics": {}}
            return {"ok": True, "outputs": "unchecked", "metrics": self._measure(launch, self._since(started), bar)}
        first, second = expected
        checks = [("check", first, "", True)] + ([("check2", second, "second input draw: ", False)] if second else [])
        digest = None
        for which, ref, what, inputs in checks:
            mismatch = self._check(which, ref, launch, inputs)
            if mismatch:
                return {"ok": True, "outputs": "mismatched", "mismatch": what + mismatch, "metrics": {}}
            if digest is None and req.get("digest"):  # the first draw's outputs, still there: their digest
                digest = digest_value(self._download(self.dev[which][i]).tobytes() for i in self.outputs)
        metrics = self._measure(launch, self._since(started), bar)
        if digest is not None:
            metrics[DIGEST] = digest
        # once more after timing: a kernel right at first and wrong after many launches is caught
        which, ref, _, _ = checks[-1]
        mismatch = self._check(which, ref, launch)
        if mismatch:
            return {"ok": True, "outputs": "mismatched", "mismatch": "after timing: " + mismatch, "metrics": {}}
        return {"ok": True, "outputs": "matched", "metrics": metrics}

    def launch_once(self, req: dict) -> dict:
        """Launch one config's kernel once on the timing inputs (``ksweep profile``: the one
        launch Nsight Compute profiles), with nothing timed or checked."""
        if not self.ready:
            raise RuntimeError("launch before setup")
        fn = self._load(req)
        smem = int(req.get("smem", 0))
        self._copy_symbols("time")
        self.b.launch(fn, req["grid"], req["block"], smem, self.dev["time"])
        self.b.sync()
        return {"ok": True}

    def _load(self, req: dict):
        """Load the config's cubin; opt in to its dynamic shared memory where static + dynamic
        is more than the 48 KB a block gets without (the GPU's own limit then applies)."""
        fn = self.b.load(req["cubin"], req["entry"])
        self._symbols_of = None  # a loaded module starts with its own (initial) symbol values
        smem = int(req.get("smem", 0))
        if smem > 0:
            static = self.b.static_smem(fn)
            if static + smem > STATIC_SMEM_LIMIT:
                try:
                    self.b.set_dynamic_smem(fn, smem)
                except CudaError as exc:
                    raise CudaError(exc.name, f"cuFuncSetAttribute: {smem} bytes of dynamic + {static} of static "
                                              f"shared memory are more than one block may opt in to on this GPU") from None
        return fn

    def _copy_symbols(self, which: str) -> None:
        """Copy input set ``which``'s cmem values into the loaded module's symbols (once per
        module and set)."""
        values = self.cmem.get(which)
        if not values or self._symbols_of == which:
            return
        for name, value in values.items():
            try:
                ptr, size = self.b.symbol(name)
            except CudaError as exc:
                if exc.name != "CUDA_ERROR_NOT_FOUND":
                    raise
                raise SymbolError(f"cmem: the module has no __constant__ or __device__ variable '{name}' "
                                  "at file scope (outside any namespace) of that name") from None
            if value.nbytes > size:
                raise SymbolError(f"cmem: '{name}' is {value.nbytes} bytes ({value.dtype}, {value.size} elements) "
                                  f"but the module's variable holds {size} bytes")
            self.b.upload(ptr, value)
        self._symbols_of = which

    def _check(self, which: str, expected, launch, inputs: bool = False) -> str | None:
        got = self._run_checked(which, launch, inputs)
        if isinstance(got, str):
            return got
        return compare(got, expected, self.atol, self.rtol,
                       check=lambda g, e: self.b.check_output(g, e, self.atol, self.rtol))

    def _run_checked(self, which: str, launch, inputs: bool = False, poison: bool = True):
        """Launch on input set ``which`` with its outputs poisoned (``poison``: an output left
        unwritten then fails its comparison); its outputs (on the device: compare them before
        the next launch), or a message when ``inputs`` (the check set) and the kernel wrote an
        array that is not an output."""
        dev = self.dev[which]
        self._copy_symbols(which)
        for i in self.outputs if poison else ():
            self.b.fill(dev[i].ptr, POISON_BYTE, dev[i].nbytes)
        launch(dev)
        self.b.sync()
        if inputs:
            for i, pristine in self._pristine.items():
                changed = self.b.differing_bytes(dev[i], pristine)
                if changed:
                    self.b.copy(dev[i].ptr, pristine.ptr, pristine.nbytes)  # the next config gets the true inputs
                    return (f"input argument {i} is not an output but the kernel changed it "
                            f"({changed} of {pristine.nbytes} bytes)")
        return [dev[i] for i in self.outputs]

    def _reference(self, path: str | None):
        """(expected outputs of the first check draw, of the second draw or None); None when
        there is nothing to compare with."""
        if path is None or not os.path.exists(path):
            return None if self.expected is None else (self.expected, self.expected2)
        if path not in self._refs:
            with np.load(path) as data:
                arrays = [data[f"arr_{i}"] for i in range(len(data.files))]
            n = len(self.outputs)
            self._refs[path] = (self._keep(arrays[:n]), self._keep(arrays[n:2 * n]) if len(arrays) >= 2 * n else None)
        return self._refs[path]

    def _since(self, start: float) -> float:
        """Milliseconds on the backend's clock since ``start``."""
        return (self.b.now() - start) * 1e3

    def _measure(self, launch, warm_ms: float = 0.0, bar_ms: float | None = None) -> dict:
        """The timing phase, then the energy phase when the energy observer is on. ``warm_ms``:
        how long the checks just before ran the kernel (they count towards the warm-up);
        ``bar_ms``: the best median so far (see _time)."""
        metrics = self._time(launch, warm_ms, bar_ms)
        if self.energy:
            metrics.update(self._energy(launch))
        return metrics

    def _time(self, launch, warm_ms: float = 0.0, bar_ms: float | None = None) -> dict:
        t = self.timing
        warmup_ms, budget_ms = float(t.get("warmup_ms", 10.0)), float(t.get("budget_ms", 40.0))
        min_reps, max_reps = int(t.get("min_reps", 7)), int(t.get("max_reps", 2000))
        args = self.dev["time"]
        self._copy_symbols("time")
        (start, end), *_ = self._event_pairs(1)
        # warm-up by time budget, the checks' launches just before counted in (at least one launch
        # on the timing inputs); its mean launch time sizes the timed loop
        # the backend's clock (the wall clock on a GPU; a stand-in GPU's own, so that its launches
        # are warmed up alike however loaded the machine running the tests is)
        n, t0, until = 0, self.b.now(), 1  # the checks before ran the kernel: its code is loaded
        self.b.record(start)
        while True:
            launch(args)
            n += 1
            if n >= until:
                self.b.record(end)
                self.b.sync()
                until = warmup_until(n, (self.b.now() - t0) * 1e3, warmup_ms, warm_ms)
                if until is None:
                    break
        per_launch = max(self.b.elapsed_ms(start, end) / n, 1e-4)
        flush_ms = 0.0
        if self.flush_ptr is not None:
            self.b.record(start)
            self.b.fill(self.flush_ptr, 0, self.flush_bytes)
            self.b.record(end)
            self.b.sync()
            flush_ms = self.b.elapsed_ms(start, end)
        reps = int(min(max_reps, max(min_reps, budget_ms / (per_launch + flush_ms))))
        events = self._event_pairs(reps + 1)[1:]  # the first pair is the warm-up's
        # timed in batches (min_reps, then doubling) up to the budget's reps; stop after a
        # batch once the median's 95% interval is within stop_ci of it (0: the whole budget).
        # Raced (``bar_ms`` given, timing.race > 0): the first batch is RACE_REPS launches, and
        # timing stops there when even the fastest took ``race`` times the best median so far
        # (such a config cannot lead: the ranking needs no more of it; its reps say so)
        stop_ci = float(t.get("stop_ci", 0.01))
        race = float(t.get("race", 1.5)) if bar_ms is not None and bar_ms > 0 else 0.0
        times: list[float] = []
        usual = min(min_reps, reps) if stop_ci > 0 else reps
        first = min(RACE_REPS, usual) if race > 0 else usual
        done, upto = 0, first
        while True:
            for i in range(done, upto):
                s, e = events[i]
                if self.flush_ptr is not None:
                    self.b.fill(self.flush_ptr, i & 0xFF, self.flush_bytes)
                self.b.record(s)
                launch(args)
                self.b.record(e)
            self.b.sync()
            times += [self.b.elapsed_ms(s, e) for s, e in events[done:upto]]
            done = upto
            raced = race > 0 and done == first and min(times) > race * bar_ms
            if raced or done >= reps or (done >= usual and precise_enough(times, stop_ci)):
                break
            upto = min(reps, max(usual, 2 * done))
        metrics = summarise(times)
        metrics["warmup_launches"] = float(n)
        if raced:
            metrics["raced"] = 1.0
        return metrics

    def _energy(self, launch) -> dict:
        """Average board power and energy per launch, from NVML's energy counter.

        The counter (millijoules) changes only every 20-100 ms, so the phase keeps the GPU
        busy with launches back to back (on the timing inputs, no L2 flush between them) and
        reads the counter between batches of them: one batch runs while the host waits for the
        one before and reads. The window measured runs from one change of the counter to a
        later one at least ``duration_ms`` after it, so both ends fall on the counter's own
        updates (the first change is skipped: it may hold energy of the idle GPU before the
        phase). Each end is placed midway between the read that saw the change and the one
        before it, in time and in launches finished. Then power = energy / time, and energy
        per launch = energy / launches, over that window."""
        duration = float(self.energy.get("duration_ms", 1000.0)) / 1e3
        args = self.dev["time"]
        self._copy_symbols("time")
        events = list(self._event_pairs(1)[0])  # the warm-up's pair, free once timing is done
        reads: list[tuple[float, int, float]] = []  # (time, launches finished, counter) at each read
        changes: list[int] = []  # the reads that saw the counter change
        batch, queued, finished, pending = 1, 0, 0, None
        start = self.b.now()
        while True:
            for _ in range(batch):
                launch(args)
            event = events[len(reads) % 2]
            self.b.record(event)
            if pending is not None:
                self.b.wait(pending)  # the batch before has finished; this one keeps the GPU busy
                finished = queued
            queued += batch
            pending = event
            now, counter = self.b.now(), self.meter.energy_mj(self.meter_device)
            if counter is None:
                raise EnergyUnavailable(f"{ENERGY_UNAVAILABLE}: NVML stopped answering during the energy phase")
            if reads and now - reads[-1][0] < ENERGY_BATCH_S / 2 and batch < MAX_BATCH:
                batch *= 2
            reads.append((now, finished, counter))
            if len(reads) > 1 and counter != reads[-2][2]:
                changes.append(len(reads) - 1)
                if len(changes) >= 3 and now - reads[changes[1]][0] >= duration:
                    break
            if now - start > duration + ENERGY_EDGE_S:
                raise EnergyUnavailable(f"{ENERGY_UNAVAILABLE}: its energy counter changed {len(changes)} times in "
                                        f"{now - start:.1f} s of launches (the phase needs 3 changes)")
        self.b.wait(pending)

        def end(k: int) -> tuple[float, float, float]:
            (t0, n0, _), (t1, n1, counter) = reads[k - 1], reads[k]
            return (t0 + t1) / 2, (n0 + n1) / 2, counter

        (t0, n0, e0), (t1, n1, e1) = end(changes[1]), end(changes[-1])
        if e1 <= e0 or n1 <= n0 or t1 <= t0:
            raise EnergyUnavailable(f"{ENERGY_UNAVAILABLE}: its energy counter went from {e0:g} to {e1:g} mJ "
                                    f"over {n1 - n0:g} launches")
        return {"power_w": (e1 - e0) / (t1 - t0) / 1e3, "energy_mj": (e1 - e0) / (n1 - n0),
                "energy_launches": float(round(n1 - n0)), "energy_window_s": t1 - t0}
    def _event_pairs(self, n: int) -> list[tuple]:
        """The first n pairs of (start, end) events, made once and reused for every config."""
        while len(self._events) < n:
            self._events.append((self.b.event(), self.b.event()))
        return self._events[:n]


def warmup_until(n: int, spent_ms: float, warmup_ms: float, before_ms: float = 0.0) -> int | None:
    """After ``n`` warm-up launches in ``spent_ms``, the kernel having run ``before_ms``
    just before them (the checks' launches): None when the warm-up is over, else the launch
    count at which to look at the clock again: when the launches left at the rate so far
    are in, at most twice ``n`` (few syncs for short kernels, and for long ones no
    overshoot of up to a doubling, as looking at powers of two gave)."""
    left_ms = warmup_ms - before_ms - spent_ms
    if left_ms <= 0:
        return None
    left = math.ceil(left_ms * n / max(spent_ms, 1e-6))
    return n + max(1, min(n, left))


def serve(backend, stdin, proto, prepared: dict | None = None) -> int:
    """Answer requests until stdin ends or an exit. ``prepared``: the first request's
    ``host_setup`` (or what it raised), made already by ``read_setup``."""
    worker = Worker(backend)
    for line in stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        fatal = False
        try:
            if op == "setup":
                resp = worker.setup(req, (prepared or {}).pop("host", None))
            elif op == "eval":
                resp = worker.evaluate(req)
            elif op == "ping":
                resp = {"ok": True}
            elif op == "exit":
                return 0
            else:
                resp = {"ok": False, "error": f"unknown op {op!r}"}
        except (SymbolError, EnergyUnavailable) as exc:
            resp = {"ok": False, "error": str(exc)}
        except CudaError as exc:
            fatal = exc.fatal
            resp = {"ok": False, "error": str(exc), "cuda_error": exc.name, "fatal": fatal}
        except Exception as exc:  # noqa: BLE001 - reported to the parent as data
            tb = traceback.format_exception(exc, limit=3)
            print("".join(tb), file=sys.stderr)
            resp = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        proto.write(json.dumps(resp) + "\n")
        proto.flush()
        if fatal:
            return 3  # the context is poisoned: exit, the parent restarts a worker
    return 0


def read_setup(stdin, into: dict) -> None:
    """Read the first request into ``into["line"]``; when it is a ``setup`` (the parent sends it
    without waiting for the hello), make its host part too: ``into["host"]`` is the
    ``HostSetup``, or the exception it raised."""
    line = stdin.readline()
    into["line"] = line
    try:
        req = json.loads(line) if line.strip() else {}
    except ValueError:
        return  # serve answers it
    if isinstance(req, dict) and req.get("op") == "setup":
        try:
            into["host"] = host_setup(req)
        except Exception as exc:  # noqa: BLE001 - raised again where setup is answered
            into["host"] = exc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ksweep-worker")
    p.add_argument("--backend", default="cuda", help="cuda, or fake:MODULE.py")
    p.add_argument("--device", type=int, default=0)
    a = p.parse_args(argv)
    # The protocol owns the real stdout; anything the user's code prints goes to stderr.
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # the first request's host part (inputs, reference: numpy, which releases the GIL) on a
    # thread, while this one starts CUDA (whose context is this thread's)
    first: dict = {}
    reader = threading.Thread(target=read_setup, args=(sys.stdin, first), daemon=True)
    reader.start()
    try:
        backend = FakeBackend(a.backend[5:]) if a.backend.startswith("fake:") else CudaBackend(a.device)
    except Exception as exc:  # noqa: BLE001
        proto.write(json.dumps({"ok": False, "error": f"backend: {exc}"}) + "\n")
        proto.flush()
        return 4
    proto.write(json.dumps({"ok": True, "hello": getattr(backend, "name", "")}) + "\n")
    proto.flush()
    reader.join()
    return serve(backend, chain([first["line"]], sys.stdin), proto, first)


if __name__ == "__main__":
    sys.exit(main())
