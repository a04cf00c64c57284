"""The state of a GPU while a run measures it: clocks, temperature, power and the reasons
the driver is holding its clocks down (NVML, through nvidia-ml-py; never nvidia-smi text).

A run measured while thermally or power throttled reports a slower time than the config
deserves: ``watch`` samples the GPU during a run (a thread, every ``period`` seconds) and
sums it up; the sweep measures such a run again once, and flags it if it is throttled
again. Behind ``GpuMonitor``: ``NvmlMonitor`` on a real GPU, ``FakeMonitor`` in tests,
``NO_MONITOR`` where there is neither a GPU nor NVML.

The same monitor reads the board's energy counter (``energy_mj``: millijoules since the
driver loaded, NVML's nvmlDeviceGetTotalEnergyConsumption), which kernel mode's worker
reads around its energy phase (kernel/worker.py). A GPU is named by its NVML index or by
its PCI bus id (what a worker that sees one GPU through CUDA_VISIBLE_DEVICES knows).
"""

from __future__ import annotations

import statistics
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

# how a failure to read the energy counter begins (kernel/worker.py): run/environment.py knows
# it for a failure of the host
ENERGY_UNAVAILABLE = "NVML cannot measure energy on this GPU"

# clock-event reasons that slow a run down (NVML's nvmlClocksEventReason* bits); idle and the
# applications-clocks setting are not throttling
THROTTLE_BITS = {
    0x0000000000000004: "sw_power_cap",
    0x0000000000000008: "hw_slowdown",
    0x0000000000000020: "sw_thermal",
    0x0000000000000040: "hw_thermal",
    0x0000000000000080: "hw_power_brake",
}


@dataclass(frozen=True)
class GpuSample:
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    reasons: int = 0  # the driver's clock-event reason bits


class GpuMonitor(Protocol):
    def sample(self, index: int) -> GpuSample | None: ...

    def versions(self) -> dict[str, str]: ...

    def energy_mj(self, device: int | str) -> float | None:
        """The board's energy counter in millijoules (``device``: NVML index or PCI bus id);
        None when it cannot be read."""
        ...


class _NoMonitor:
    def sample(self, index: int) -> GpuSample | None:
        return None

    def versions(self) -> dict[str, str]:
        return {}

    def energy_mj(self, device: int | str) -> float | None:
        return None


NO_MONITOR = _NoMonitor()


class FakeMonitor:
    """Samples from a function of (index, call number): tests and replays. ``energy``: the
    energy counter, a function of (device, call number) -> millijoules (a scripted counter;
    kernel/backend.FakeBackend's integrates its stand-in kernels' power)."""

    def __init__(self, fn: Callable[[int, int], GpuSample | None], versions: dict[str, str] | None = None,
                 energy: Callable[[int | str, int], float | None] | None = None):
        self._fn, self._n, self._versions = fn, 0, dict(versions or {})
        self._energy, self._energy_n = energy, 0
        self._lock = threading.Lock()

    def sample(self, index: int) -> GpuSample | None:
        with self._lock:
            n, self._n = self._n, self._n + 1
        return self._fn(index, n)

    def versions(self) -> dict[str, str]:
        return dict(self._versions)

    def energy_mj(self, device: int | str) -> float | None:
        if self._energy is None:
            return None
        with self._lock:
            n, self._energy_n = self._energy_n, self._energy_n + 1
        return self._energy(device, n)


class NvmlMonitor:
    """Reads NVML (``pip install nvidia-ml-py``); unusable NVML makes it a monitor of nothing."""

    def __init__(self):
        self._nv = None
        self._handles: dict[int, object] = {}
        self._lock = threading.Lock()
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nv = pynvml
        except Exception:  # no module, no driver, no GPU: nothing to read, never a failed run
            self._nv = None

    def _handle(self, device: int | str):
        if device not in self._handles:
            nv = self._nv
            self._handles[device] = (nv.nvmlDeviceGetHandleByPciBusId(device) if isinstance(device, str)
                                     else nv.nvmlDeviceGetHandleByIndex(device))
        return self._handles[device]

    def energy_mj(self, device: int | str) -> float | None:
        """nvmlDeviceGetTotalEnergyConsumption (Volta and newer); None without NVML, on an
        older GPU or when the driver refuses."""
        if self._nv is None:
            return None
        with self._lock:
            try:
                return float(self._nv.nvmlDeviceGetTotalEnergyConsumption(self._handle(device)))
            except Exception:
                return None

    def sample(self, index: int) -> GpuSample | None:
        nv = self._nv
        if nv is None:
            return None
        with self._lock:
            try:
                h = self._handle(index)
                reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                    nv.nvmlDeviceGetCurrentClocksThrottleReasons
                return GpuSample(
                    sm_clock_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                    mem_clock_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                    temperature_c=nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
                    power_w=nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                    reasons=int(reasons_fn(h)),
                )
            except Exception:
                return None

    def versions(self) -> dict[str, str]:
        nv = self._nv
        if nv is None:
            return {}
        try:
            cuda = nv.nvmlSystemGetCudaDriverVersion_v2()
            driver = nv.nvmlSystemGetDriverVersion()
            return {"cuda": f"{cuda // 1000}.{cuda % 1000 // 10}",
                    "driver": driver.decode() if isinstance(driver, bytes) else str(driver)}
        except Exception:
            return {}


def summarize(samples: list[GpuSample], versions: dict[str, str] | None = None) -> dict:
    """A run's GPU state from its samples: median and lowest SM clock, memory clock, highest
    temperature, highest and mean power (the samples' mean: board power over the whole run,
    not per launch), every throttle reason seen, and whether any slowed the run."""
    samples = [s for s in samples if s is not None]
    if not samples:
        return {}
    reasons = 0
    for s in samples:
        reasons |= s.reasons
    named = sorted(name for bit, name in THROTTLE_BITS.items() if reasons & bit)

    def vals(attr):
        return [getattr(s, attr) for s in samples if getattr(s, attr) is not None]

    out = {"samples": len(samples), "throttled": bool(named), "throttle_reasons": named}
    if vals("sm_clock_mhz"):
        out["sm_clock_mhz"] = int(statistics.median(vals("sm_clock_mhz")))
        out["sm_clock_min_mhz"] = min(vals("sm_clock_mhz"))
    if vals("mem_clock_mhz"):
        out["mem_clock_mhz"] = int(statistics.median(vals("mem_clock_mhz")))
    if vals("temperature_c"):
        out["temperature_max_c"] = max(vals("temperature_c"))
    if vals("power_w"):
        out["power_max_w"] = round(max(vals("power_w")), 1)
        out["power_mean_w"] = round(statistics.fmean(vals("power_w")), 1)
    out.update({f"{k}_version": v for k, v in (versions or {}).items()})
    return out


class _Watch:
    def __init__(self):
        self.samples: list[GpuSample] = []
        self.state: dict = {}


@contextmanager
def watch(monitor: GpuMonitor, index: int | None, period: float = 0.05) -> Iterator[_Watch]:
    """Sample GPU ``index`` before, during (every ``period`` s) and after the block; the
    summary is in ``.state`` once the block has ended."""
    w = _Watch()
    if index is None or monitor is NO_MONITOR:
        yield w
        return
    stop = threading.Event()

    def loop():
        while not stop.wait(period):
            w.samples.append(monitor.sample(index))

    w.samples.append(monitor.sample(index))
    thread = threading.Thread(target=loop, name="ksweep-gpu-state", daemon=True)
    thread.start()
    try:
        yield w
    finally:
        stop.set()
        thread.join(timeout=1.0)
        w.samples.append(monitor.sample(index))
        w.state = summarize(w.samples, monitor.versions())
