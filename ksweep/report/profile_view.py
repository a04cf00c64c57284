"""A stored Nsight Compute profile in a few lines (pure): the numbers that answer "why is
it fast" first, for ``ksweep explain`` and ``ksweep report``."""

from __future__ import annotations

from typing import Mapping

from ..profile.ncu import LaunchProfile

# (label, metric, unit shown)
HEADLINE = (
    ("duration", "gpu__time_duration.sum", None),
    ("SM throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("memory throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("DRAM throughput", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("L1 hit rate", "l1tex__t_sector_hit_rate.pct", "%"),
    ("L2 hit rate", "lts__t_sector_hit_rate.pct", "%"),
    ("achieved occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", "%"),
    ("theoretical occupancy", "sm__maximum_warps_per_active_cycle_pct", "%"),
    ("issue slots busy", "smsp__issue_active.avg.pct_of_peak_sustained_active", "%"),
    ("smem bank conflicts (ld)", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", ""),
    ("smem bank conflicts (st)", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", ""),
)
_STALL = "smsp__average_warps_issue_stalled_"


def first_launch(profile: Mapping) -> LaunchProfile | None:
    launches = profile.get("launches") or []
    return LaunchProfile.from_json(launches[0]) if launches else None


def headline(p: LaunchProfile) -> dict[str, str]:
    """label -> shown value of the headline metrics this profile has."""
    out = {}
    for label, name, unit in HEADLINE:
        m = p.metrics.get(name)
        if m is None or not isinstance(m.value, float):
            continue
        u = m.unit if unit is None else unit
        out[label] = f"{m.value:,.4g}{' ' + u if u and u != '%' else u}"
    pipes = sorted(((k, m.value) for k, m in p.metrics.items()
                    if k.startswith("sm__pipe_") and isinstance(m.value, float)), key=lambda kv: -kv[1])[:3]
    if pipes:
        out["busiest pipes"] = ", ".join(f"{_pipe(k)} {v:.3g}%" for k, v in pipes)
    stalls = sorted(((k, m.value) for k, m in p.metrics.items()
                     if k.startswith(_STALL) and isinstance(m.value, float) and "not_issued" not in k),
                    key=lambda kv: -kv[1])[:3]
    if stalls:
        out["top warp stalls"] = ", ".join(f"{_stall(k)} {v:.3g}" for k, v in stalls) + " (cycles per issue)"
    return out


def profile_lines(profile: Mapping) -> list[str]:
    p = first_launch(profile)
    if p is None:
        return ["  no profiled launch"]
    lines = [f"  kernel {p.kernel}" + (f"  ({profile.get('metric_set')} set, {profile.get('tool')})"
                                         if profile.get("metric_set") else "")]
    h = headline(p)
    width = max((len(k) for k in h), default=0)
    lines += [f"  {k:<{width}}  {v}" for k, v in h.items()]
    return lines


def _pipe(name: str) -> str:
    core = name[len("sm__pipe_"):].split("_cycles_active")[0]
    return core


def _stall(name: str) -> str:
    return name[len(_STALL):].split("_per_issue_active")[0]


def profiles_block(profiles: list[dict]) -> list[str]:
    """The stored profiles under ``ksweep report``'s table: per shape × variant, each profiled
    config (its latest profile) with its headline metrics."""
    latest: dict = {}
    for p in profiles:
        key = (p["variant"], p["shape"], tuple(sorted(p["params"].items())))
        latest[key] = p
    lines = ["", "Nsight Compute profiles (ksweep profile; ksweep compare DB A B for the whole diff):"]
    for (variant, shape, _), p in latest.items():
        lines.append(f"  {shape}/{variant} " + " ".join(f"{k}={v}" for k, v in p["params"].items()))
        lines += ["  " + line for line in profile_lines(p)[1:]]
    return lines
