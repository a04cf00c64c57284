"""Nsight Compute: its command lines, and its machine-readable CSV read back (pure but ``run``).

A profile is taken in two steps, both through ``ncu`` itself: the program runs under
``ncu --export REPORT`` (the kernels chosen by name, launch skip and count, with the
metric set's metrics), then ``ncu --import REPORT --csv --page raw`` prints every metric
collected as CSV: a header of metric names, a row of units, a row per profiled launch.
``ncu --csv --page details`` exports (``Section Name``, ``Metric Name``, ``Metric Unit``,
``Metric Value`` per row), as seed 003's ``compare.py`` reads, are read too.

The default set answers the usual questions (duration; SM, memory and DRAM throughput
as % of peak; L1 and L2 hit rates; achieved and theoretical occupancy and what limits
it; tensor, FMA and other pipe utilisation; the warp-stall reasons; shared-memory bank
conflicts); ``full`` is ncu's own ``--set full``; a spec may list its own metrics.
"""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

DEFAULT_METRICS: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
    "launch__block_size",
    "launch__grid_size",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "smsp__inst_executed.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    r"regex:^sm__pipe_(tensor|fma|alu|fp16|fp64|shared|fmaheavy)\w*_cycles_active\.avg\.pct_of_peak_sustained_active$",
    r"regex:^sm__inst_executed_pipe_(tensor|fma|alu|lsu|uniform|xu)\w*\.avg\.pct_of_peak_sustained_active$",
    r"regex:^smsp__average_warps_issue_stalled_\w+_per_issue_active\.ratio$",
)

# Metric name prefix -> the section it is shown under (longest prefix wins).
_SECTIONS = (
    ("gpu__time_duration", "Duration"),
    ("sm__throughput", "Speed of light"),
    ("gpu__compute_memory_throughput", "Speed of light"),
    ("dram__throughput", "Speed of light"),
    ("dram__", "Memory"),
    ("l1tex__t_", "Memory"),
    ("lts__", "Memory"),
    ("l1tex__data_bank_conflicts", "Shared memory"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared", "Shared memory"),
    ("sm__warps_active", "Occupancy"),
    ("sm__maximum_warps", "Occupancy"),
    ("launch__occupancy", "Occupancy"),
    ("launch__", "Launch"),
    ("sm__pipe_", "Pipe utilisation"),
    ("sm__inst_executed_pipe_", "Pipe utilisation"),
    ("smsp__average_warps_issue_stalled", "Warp stalls"),
    ("smsp__pcsamp", "Warp stalls"),
    ("smsp__", "Instructions"),
    ("sm__", "SM"),
    ("l1tex__", "Memory"),
)


SECTION_ORDER = ("Duration", "Speed of light", "Memory", "Shared memory", "Occupancy", "Pipe utilisation",
                 "Warp stalls", "Instructions", "Launch", "SM", "Other")
# What the raw page also prints that is no measurement of the kernel: the GPU's static
# attributes and the profiler's own bookkeeping. Not stored.
_NOT_METRICS = ("device__attribute", "c2clink__", "nvlink__", "profiler__", "pmsampling__")


def section_of(metric: str) -> str:
    best = ""
    name = "Other"
    for prefix, section in _SECTIONS:
        if metric.startswith(prefix) and len(prefix) > len(best):
            best, name = prefix, section
    return name


@dataclass(frozen=True)
class Metric:
    value: float | str
    unit: str = ""
    section: str = "Other"

    def to_json(self) -> dict:
        return {"value": self.value, "unit": self.unit, "section": self.section}


@dataclass(frozen=True)
class LaunchProfile:
    """The metrics of one profiled kernel launch."""

    kernel: str
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    launch_id: str = ""

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "launch_id": self.launch_id,
                "metrics": {k: m.to_json() for k, m in self.metrics.items()}}

    @classmethod
    def from_json(cls, d: Mapping) -> "LaunchProfile":
        return cls(d["kernel"], {k: Metric(v["value"], v.get("unit", ""), v.get("section", section_of(k)))
                                 for k, v in d.get("metrics", {}).items()}, d.get("launch_id", ""))

    def value(self, name: str) -> float | None:
        m = self.metrics.get(name)
        return m.value if m is not None and isinstance(m.value, float) else None


class NcuError(Exception):
    """Nsight Compute could not profile (missing, no permission for the counters, ...)."""


# -- command lines ---------------------------------------------------------------------
def metric_args(metrics: str | Sequence[str]) -> list[str]:
    """ncu's options for a metric set: ``default``, ``full`` or a list of names."""
    if metrics == "full":
        return ["--set", "full"]
    names = DEFAULT_METRICS if metrics == "default" else tuple(metrics)
    return ["--metrics", ",".join(names)]


def profile_argv(ncu: str, report: Path, argv: Sequence[str], *, kernel: str | None = None,
                 launch_skip: int = 0, launch_count: int = 1, metrics: str | Sequence[str] = "default",
                 log_file: Path | None = None) -> list[str]:
    """``ncu`` wrapping a program's command: the chosen launches' metrics into ``report``
    (ncu's own messages into ``log_file``, apart from the program's output). Clocks are
    left as they are (``--clock-control none``): the profile sees what the sweep measured."""
    out = [ncu, "--export", str(report), "--force-overwrite", "--target-processes", "all",
           "--clock-control", "none", "--launch-skip", str(launch_skip), "--launch-count", str(launch_count)]
    if kernel:
        out += ["--kernel-name-base", "demangled", "--kernel-name", f"regex:{kernel}"]
    if log_file is not None:
        out += ["--log-file", str(log_file)]
    out += metric_args(metrics)
    return out + [*argv]


def import_argv(ncu: str, report: Path, page: str = "raw") -> list[str]:
    return [ncu, "--import", str(report), "--csv", "--page", page]


def find_ncu(given: str | None = None) -> str | None:
    """The ncu program: ``given`` (a path, or a name looked up on the PATH) when it is an
    executable file, as an absolute path, else None; without it, ncu on the PATH or where the CUDA toolkit and
    Nsight Compute install it."""
    if given is not None:
        found = shutil.which(given)
        return str(Path(found).absolute()) if found else None  # ncu runs in a folder of its own
    found = shutil.which("ncu")
    if found:
        return found
    for root in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"), reverse=True) + \
            [Path("/usr/local/cuda/bin/ncu")]:
        if root.is_file():
            return str(root)
    return None


# -- reading its CSV ---------------------------------------------------------------------
_ID_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Device",
               "CC", "Block Size", "Grid Size", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
               "Estimated Speedup", "Estimated Speedup Type", "Rule Name", "Rule Type", "Rule Description",
               "Kernel Time", "Device Name"}


def number(text: str) -> float | str:
    """A metric's value as a float (``1,234.5`` -> 1234.5), or its text when it is none."""
    t = text.strip()
    try:
        v = float(t.replace(",", ""))
    except ValueError:
        return t
    return v if math.isfinite(v) else t


def parse_csv(text: str) -> list[LaunchProfile]:
    """The launches of an ``ncu --csv`` export: the raw page (a column per metric) or the
    details page (a row per metric, with its section)."""
    rows = [r for r in csv.reader(io.StringIO(_csv_part(text))) if r]
    if not rows:
        raise NcuError("no CSV in Nsight Compute's output")
    header = rows[0]
    if header[0] != "ID" or "Kernel Name" not in header:  # what every page of ncu's begins with
        raise NcuError("not an Nsight Compute CSV export: its header is not ncu's (\"ID\", …, \"Kernel Name\", …, "
                       "as ncu --import REPORT --csv --page raw or --page details writes it)")
    if "Metric Name" in header and "Metric Value" in header:
        return _details(header, rows[1:])
    return _raw(header, rows[1:])


def _csv_part(text: str) -> str:
    """The CSV of ncu's output, without the ``==PROF==`` lines and the program's own output
    that come before it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith('"ID"') or line.startswith("ID,"):
            return "\n".join(lines[i:])
    return "\n".join(line for line in lines if not line.startswith("==PROF=="))


def _raw(header: list[str], rows: list[list[str]]) -> list[LaunchProfile]:
    units = rows[0] if rows and not (rows[0] and rows[0][0].strip().isdigit()) else None
    data = rows[1:] if units is not None else rows
    at = {name: i for i, name in enumerate(header)}
    out = []
    for row in data:
        if len(row) < len(header):
            continue
        metrics = {}
        for i, name in enumerate(header):
            if name in _ID_COLUMNS or not name or name.startswith(_NOT_METRICS):
                continue
            value = number(row[i])
            if value == "" or value == "n/a":
                continue
            metrics[name] = Metric(value, units[i] if units and i < len(units) else "", section_of(name))
        kernel = row[at["Kernel Name"]] if "Kernel Name" in at else "?"
        out.append(LaunchProfile(kernel, metrics, row[at["ID"]] if "ID" in at else ""))
    return out


def _details(header: list[str], rows: list[list[str]]) -> list[LaunchProfile]:
    at = {name: i for i, name in enumerate(header)}
    launches: dict[str, tuple[str, dict]] = {}
    for row in rows:
        if len(row) < len(header):
            continue
        launch = row[at["ID"]] if "ID" in at else "0"
        kernel = row[at["Kernel Name"]] if "Kernel Name" in at else "?"
        name = row[at["Metric Name"]]
        if not name:
            continue
        section = row[at["Section Name"]] if "Section Name" in at else ""
        if not section or section == "Command line profiler metrics":  # --metrics: no section of ncu's own
            section = section_of(name)
        metrics = launches.setdefault(launch, (kernel, {}))[1]
        metrics[name] = Metric(number(row[at["Metric Value"]]), row[at["Metric Unit"]] if "Metric Unit" in at else "",
                               section)
    return [LaunchProfile(k, m, launch) for launch, (k, m) in launches.items()]


_PERMISSION = re.compile(r"ERR_NVGPUCTRPERM|permission to access NVIDIA GPU Performance Counters", re.I)


def failure_line(output: str, returncode: int | None) -> str:
    """One line saying why ncu did not profile."""
    if _PERMISSION.search(output):
        return ("Nsight Compute has no permission to read the GPU's performance counters "
                "(ERR_NVGPUCTRPERM): run as root, or allow it with the driver option "
                "NVreg_RestrictProfilingToAdminUsers=0")
    errors = [line.split("==ERROR==", 1)[1].strip() for line in output.splitlines() if "==ERROR==" in line]
    warnings = [line.split("==WARNING==", 1)[1].strip() for line in output.splitlines() if "==WARNING==" in line]
    if errors:
        return f"Nsight Compute failed: {errors[0]}"
    if warnings and "No kernels were profiled" in " ".join(warnings):
        return "Nsight Compute profiled no kernel: check [profile] kernel (a regular expression of its name)"
    tail = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["no output"]
    return f"Nsight Compute exited with {returncode}: {tail[0][:200]}"
