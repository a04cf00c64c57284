"""Summary of a hopper_gemm sweep (bench/hopper_gemm.sh): per shape, the table of each phase
(Tier 1: every switch at its default; Tier 2: the rest), the best config, default against
best, the cuBLASLt baselines measured in the same processes, the build cost, and what the
confirmation runs say (each confirmed config's median and 95% interval, BEST or TIE, and the
confirmed BEST against the default).

    python bench/hopper_gemm_summary.py DB SPEC
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import Counter

import ksweep
from ksweep.job import config_id
from ksweep.verify.confirm import confirmed
from ksweep.store.sqlite import Store

METRICS = ("ms", "tflops", "unfused_ms", "gemm_only_ms", "lt_fused_ms", "max_rel_err", "mismatches")


def main(db: str, spec_path: str) -> int:
    spec = ksweep.load_spec(spec_path)
    switches = {p.name: p.default for p in spec.params if p.tier == 2}
    tier1 = [p.name for p in spec.params if p.tier == 1]
    with Store(db) as store:
        results = list(store.results())
        measured = list(store.measurements())
        defaults = store.default_configs()
    for shape in [s.name for s in spec.shapes]:
        rows = [r for r in results if r.shape == shape]
        if not rows:
            continue
        ok = [r for r in rows if r.status.value == "OK" and "ms" in r.metrics]
        print(f"\n## {shape}: {len(rows)} configs, {len(ok)} OK, "
              f"statuses {dict(sorted(Counter(r.status.value for r in rows).items()))}")
        built = [r.build_seconds for r in rows if r.build_seconds]
        if built:
            print(f"build seconds per config (one nvcc each, run side by side): median {statistics.median(built):.1f}, "
                  f"min {min(built):.1f}, max {max(built):.1f} ({len(built)} builds)")
        for phase in ("tier1", "tier2"):
            sel = [r for r in ok if (r.phase or _phase(r, switches)) == phase]
            if not sel:
                continue
            sel.sort(key=lambda r: r.metrics["ms"])
            names = tier1 if phase == "tier1" else list(switches)
            print(f"\n{phase}: {len(sel)} OK configs, the 8 fastest")
            print(" | ".join(names + ["ms", "TFLOP/s", "unfused ms", "x unfused"]))
            for r in sel[:8]:
                m = r.metrics
                print(" | ".join([str(r.params.get(n, "")) for n in names]
                                 + [f"{m['ms']:.4f}", f"{m.get('tflops', 0):.0f}",
                                    f"{m.get('unfused_ms', float('nan')):.4f}",
                                    f"{m.get('unfused_ms', float('nan')) / m['ms']:.2f}"]))
        if not ok:
            continue
        best = min(ok, key=lambda r: r.metrics["ms"])
        params = spec.effective_params(spec.shape(shape), spec.variant_list()[0])  # the shape's own switches too
        default = next((r for r in ok if all(r.params.get(p.name) == p.default for p in params)), None)
        m = best.metrics
        print(f"\nbest: {dict(best.params)}")
        print("  " + ", ".join(f"{k}={m[k]:.5g}" for k in METRICS if k in m))
        unfused = [r.metrics["unfused_ms"] for r in ok if "unfused_ms" in r.metrics]
        gemm_only = [r.metrics["gemm_only_ms"] for r in ok if "gemm_only_ms" in r.metrics]
        lt_fused = [r.metrics["lt_fused_ms"] for r in ok if math.isfinite(r.metrics.get("lt_fused_ms", math.nan))]
        for name, vals in (("unfused (cuBLASLt + bias, then the rest)", unfused),
                           ("cuBLASLt GEMM only", gemm_only), ("cuBLASLt's own fused epilogue", lt_fused)):
            if vals:
                print(f"  {name}: median {statistics.median(vals):.4f} ms over {len(vals)} runs "
                      f"(min {min(vals):.4f}, max {max(vals):.4f})")
        if unfused:
            print(f"  best vs unfused: {statistics.median(unfused) / m['ms']:.3f}x")
        if gemm_only:
            flops = m["tflops"] * m["ms"] * 1e9
            print(f"  best TFLOP/s {m['tflops']:.0f} = {100 * statistics.median(gemm_only) / m['ms']:.1f}% of "
                  f"cuBLASLt GEMM-only's {flops / statistics.median(gemm_only) / 1e9:.0f}")
        if "gemm_only_paired_ratio" in m:
            print(f"  best: {100 * m['gemm_only_paired_ratio']:.1f}% of GEMM-only's throughput, the two timed "
                  f"in alternating blocks (fused {m['paired_ms']:.4f} ms, GEMM only {m['paired_gemm_only_ms']:.4f} ms)")
        for key, what in (("speedup_unfused_paired", "unfused"), ("speedup_lt_fused_paired", "cuBLASLt's own fused epilogue")):
            if math.isfinite(m.get(key, math.nan)):
                print(f"  best vs {what}, the two timed in alternating blocks: {m[key]:.3f}x")
        if default is not None:
            print(f"  default {default.metrics['ms']:.4f} ms -> best {m['ms']:.4f} ms: "
                  f"{default.metrics['ms'] / m['ms']:.3f}x")
        confirmation(results, measured, defaults, spec.variant_list()[0].name, shape)
    return 0


def confirmation(results, measured, defaults, variant: str, shape: str) -> None:
    """The confirmation's verdicts (ksweep's own reading: runs of an older experiment on the
    same database are not counted), and the confirmed BEST against the default."""
    found = confirmed(results, measured, "min", defaults).get((variant, shape))
    if found is None or not found.verdicts:
        return
    params = {config_id(r.params): dict(r.params) for r in results if r.variant == variant and r.shape == shape}
    print(f"\nconfirmation: {len(found.verdicts)} configs, {found.rounds} rounds")
    for cid, v in sorted(found.verdicts.items(), key=lambda kv: kv[1].interval.median):
        iv = v.interval
        tag = " (default)" if cid == found.default else ""
        print(f"  {v.mark or '-':4} {iv.median:.4f} ms [{iv.lo:.4f}-{iv.hi:.4f}] n={iv.n}{tag}  {params.get(cid, cid)}")
    if found.speedup is not None and found.best != found.default:
        f = found.speedup
        print(f"  confirmed BEST vs the default: {f.median:.3f}x (95% interval {f.lo:.3f}-{f.hi:.3f})")
    per_run(measured, found, variant, shape)


def per_run(measured, found, variant: str, shape: str) -> None:
    """Each confirmed config's runs against the cuBLASLt baselines timed in the same process:
    the median (and range) of GEMM-only's time over the kernel's (its share of GEMM-only's
    throughput), and of the unfused and cuBLASLt-fused times over the kernel's (its speed-up)."""
    runs: dict[str, list] = {}
    for m in measured:
        cid = config_id(m.params)
        if (m.variant, m.shape) == (variant, shape) and cid in found.verdicts and m.value and m.metrics:
            runs.setdefault(cid, []).append(m)
    for cid, ms in runs.items():
        parts = []
        for key, what in (("gemm_only_ms", "of GEMM-only's throughput"), ("unfused_ms", "x unfused"),
                          ("lt_fused_ms", "x cuBLASLt's fused")):
            ratios = [m.metrics[key] / m.value for m in ms if key in m.metrics]
            if ratios:
                parts.append(f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) {what}")
        # the kernel and each baseline timed in alternating blocks of one run (the harness)
        for key, what in (("gemm_only_paired_ratio", "of GEMM-only's"), ("speedup_unfused_paired", "x unfused"),
                          ("speedup_lt_fused_paired", "x cuBLASLt's fused")):
            paired = [m.metrics[key] for m in ms if math.isfinite(m.metrics.get(key, math.nan))]
            if paired:
                parts.append(f"{statistics.median(paired):.3f} ({min(paired):.3f}-{max(paired):.3f}) "
                             f"{what}, timed in alternating blocks")
        mark = found.verdicts[cid].mark or "-"
        print(f"  {mark:4} per run, {len(ms)} runs: " + "; ".join(parts))


def _phase(r, switches) -> str:
    return "tier1" if all(r.params.get(k, v) == v for k, v in switches.items()) else "tier2"


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
