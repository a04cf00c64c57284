"""Time constrained-space construction: ksweep vs pyATF vs Kernel Tuner (issue 2, item 5).

    python bench/space_construction.py [--repeats 3] [--json] [--spaces a,b,c] [--verify-configs]

Every measurement runs in a fresh Python process (this file re-run with ``--worker``), which
imports only the tool under test. The timed region is the construction call alone:

  ksweep        ``Space(params, constraints)``  (constraint strings, parsed inside the call)
  pyATF         ``pyatf.search_space.SearchSpace(*tps, verbosity=0)``  (the full chain of
                trees, every valid leaf; ``enable_1d_access=False``, pyATF's default and
                its faster mode — ``True`` additionally stores every leaf's tuple)
  Kernel Tuner  ``kernel_tuner.searchspace.Searchspace(tune_params, restrictions, 1024)``
                (string restrictions, default python-constraint2 solver; builds the list of
                every valid config)

Imports are timed separately. Reported times are medians over ``--repeats`` fresh processes,
interleaved round by round (space x tool) so slow drifts on a shared machine hit all tools.
Valid counts from every run must agree across the three tools, or the script exits 1.

All three tools get the *same* constraint strings. pyATF takes one constraint lambda per
tuning parameter, so (exactly as Kernel Tuner's own pyATF back-end does) each constraint is
attached to the last parameter, in definition order, that it reads; the constraints on one
parameter are joined with ``and`` and compiled into ``lambda <params read>: ...``. The
lambdas are built before the timed region.

Memory (ksweep, and for context the others): ``ru_maxrss`` of the fresh process (interpreter
+ imports + construction), the growth of the peak over the RSS just before construction,
and — in one extra, untimed process per space, since tracing slows allocation —
``tracemalloc``'s peak during construction (numpy reports its buffers to tracemalloc).

``--verify-configs`` additionally dumps every valid config from every tool (in fresh
processes, untimed) and checks that the three sets are identical, checks (a) and (b) against
a plain-Python brute force, and checks that the ``((x + 127)//128)*128`` spelling of the
SMEM round-up in (a) gives the same count as ``& ~127`` in every tool.
"""

from __future__ import annotations

import argparse
import ast
import gc
import hashlib
import itertools
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

TOOLS = ("ksweep", "pyatf", "kt")
TOOL_LABEL = {"ksweep": "ksweep", "pyatf": "pyATF", "kt": "KT"}
KT_MAX_THREADS = 1024  # Kernel Tuner adds block_size_x*block_size_y*block_size_z <= max_threads

# -- the spaces ------------------------------------------------------------------------

# (a) seed 000's Tier-1 space. TK = TM = 128 and N_DIM = 768 are inlined; the derived SMEM
# layout is written as one expression:
#   stage_bytes = TK*TM + TK*(TN//2); off_tmem = N_STAGES*stage_bytes
#   off_tma_mbar = off_tmem + 8; off_mma_mbar = off_tma_mbar + N_STAGES*8
#   off_mainloop_mbar = off_mma_mbar + N_STAGES*8; off_epilogue_mbar = off_mainloop_mbar + 16
#   off_staging = (off_epilogue_mbar + 16 + 127) & ~127; staging_row_bytes = TN*2 + STAGING_ROW_PAD
#   smem_total = (off_staging + NUM_EPI_WARPS*32*staging_row_bytes + 127) & ~127 <= 233472
# All three tools accept '& ~127' (ksweep's expression language has & and ~, pyATF lambdas
# are Python, python-constraint2 parses it), so it is used verbatim; SEED_SMEM_ARITH is the
# '((x + 127)//128)*128' spelling, cross-checked under --verify-configs.
_SEED_OFF_EPI_END = "N_STAGES*(128*128 + 128*(TN//2)) + 8 + N_STAGES*8 + N_STAGES*8 + 16 + 16"
SEED_SMEM = (
    f"((((({_SEED_OFF_EPI_END} + 127) & ~127) + NUM_EPI_WARPS*32*(TN*2 + STAGING_ROW_PAD) + 127)"
    " & ~127) <= 233472)"
)
SEED_SMEM_ARITH = (
    f"((((({_SEED_OFF_EPI_END} + 127)//128)*128 + NUM_EPI_WARPS*32*(TN*2 + STAGING_ROW_PAD) + 127)"
    "//128)*128 <= 233472)"
)


def _seed_constraints(smem: str) -> list[str]:
    return [
        "32*(2+NUM_EPI_WARPS) <= 1024",  # threads per block
        "NUM_EPI_WARPS >= 4",
        smem,
        "TN*2 <= 512",  # TMEM columns
        "768 % TN == 0",  # N_DIM % TN
        "TN//32 in (4, 8)",
        "NUM_EPI_WARPS <= 4 or (TN//2)//32 in (4, 8)",  # split epilogue
    ]


SPACES: dict[str, dict] = {
    "a": {
        "name": "(a) seed 000 Tier-1",
        "params": {
            "TN": [128, 256],
            "N_STAGES": [3, 4, 5],
            "NUM_EPI_WARPS": [4, 5],
            "PHASE2_UNROLL": [4, 8, 16],
            "STAGING_ROW_PAD": [0, 16, 32],
        },
        "constraints": _seed_constraints(SEED_SMEM),
        "expect": (108, 69),
    },
    "b": {
        "name": "(b) CLBlast GEMM",
        "params": {
            "MWG": [16, 32, 64, 128],
            "NWG": [16, 32, 64, 128],
            "KWG": [16, 32],
            "MDIMC": [8, 16, 32],
            "NDIMC": [8, 16, 32],
            "MDIMA": [8, 16, 32],
            "NDIMB": [8, 16, 32],
            "KWI": [2],
            "VWM": [1, 2, 4, 8],
            "VWN": [1, 2, 4, 8],
            "STRM": [0, 1],
            "STRN": [0, 1],
            "SA": [0, 1],
            "SB": [0, 1],
        },
        "constraints": [
            "KWG % KWI == 0",
            "MWG % (MDIMC*VWM) == 0",
            "NWG % (NDIMC*VWN) == 0",
            "MWG % (MDIMA*VWM) == 0",
            "NWG % (NDIMB*VWN) == 0",
            "KWG % ((MDIMC*NDIMC)/MDIMA) == 0",
            "KWG % ((MDIMC*NDIMC)/NDIMB) == 0",
        ],
        "expect": (663_552, 120_800),
    },
    "c": {
        "name": "(c) hotspot",
        "params": {
            "block_size_x": [1, 2, 4, 8, 16] + [32 * i for i in range(1, 33)],
            "block_size_y": [2**i for i in range(6)],
            "tile_size_x": list(range(1, 11)),
            "tile_size_y": list(range(1, 11)),
            "temporal_tiling_factor": list(range(1, 11)),
            "max_tfactor": [10],
            "loop_unroll_factor_t": list(range(1, 11)),
            "sh_power": [0, 1],
            "blocks_per_sm": list(range(5)),
        },
        "constraints": [
            "block_size_x*block_size_y >= 32",
            "temporal_tiling_factor % loop_unroll_factor_t == 0",
            "block_size_x*block_size_y <= 1024",
            "(block_size_x*tile_size_x + temporal_tiling_factor*2) * (block_size_y*tile_size_y + "
            "temporal_tiling_factor*2) * (2+sh_power) * 4 <= 49152",
            "blocks_per_sm == 0 or ((block_size_x*tile_size_x + temporal_tiling_factor*2) * "
            "(block_size_y*tile_size_y + temporal_tiling_factor*2) * (2+sh_power) * 4) * blocks_per_sm "
            "<= 102400",
        ],
        "expect": (22_200_000, 349_853),
    },
}
# the alternative spelling of (a), only used by --verify-configs
SPACES["a_arith"] = dict(SPACES["a"], name="(a') seed 000, //128*128", constraints=_seed_constraints(SEED_SMEM_ARITH))


def raw_size(key: str) -> int:
    return math.prod(len(v) for v in SPACES[key]["params"].values())


# -- per-tool construction (runs inside the worker process) ----------------------------


def _names(expr: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def pyatf_tps(params: dict, constraints: list[str]):
    """One pyATF TP per parameter; each constraint hangs on the last parameter it reads."""
    from pyatf import TP, Set

    order = list(params)
    attached: dict[str, list[str]] = {p: [] for p in order}
    for expr in constraints:
        reads = _names(expr) & set(params)
        attached[max(reads, key=order.index)].append(expr)
    tps = []
    for p in order:
        fn = None
        if attached[p]:
            args = sorted(set().union(*(_names(e) & set(params) for e in attached[p])) | {p}, key=order.index)
            body = " and ".join(f"({e})" for e in attached[p])
            fn = eval(f"lambda {', '.join(args)}: {body}", {"__builtins__": {}})  # noqa: S307 - our own strings
        tps.append(TP(p, Set(*params[p]), fn))
    return tps


def _import(tool: str):
    if tool == "ksweep":
        from ksweep.space.space import Space

        return Space
    if tool == "pyatf":
        from pyatf.search_space import SearchSpace

        return SearchSpace
    if tool == "kt":
        from kernel_tuner.searchspace import Searchspace

        return Searchspace
    raise ValueError(tool)


def _prepare(tool: str, key: str):
    """Build the tool's inputs (untimed); returns a zero-argument construction call."""
    sp = SPACES[key]
    params = {k: list(v) for k, v in sp["params"].items()}
    cons = list(sp["constraints"])
    cls = _import(tool)
    if tool == "ksweep":
        return lambda: cls(params, cons)
    if tool == "pyatf":
        tps = pyatf_tps(params, cons)
        return lambda: cls(*tps, verbosity=0)
    return lambda: cls(params, cons, KT_MAX_THREADS)


def _count(tool: str, obj) -> int:
    if tool == "ksweep":
        return len(obj)
    if tool == "pyatf":
        return obj.constrained_size
    assert obj.size == len(obj.list)
    return obj.size


def _configs(tool: str, key: str, obj) -> list[tuple]:
    """Every valid config as a tuple in spec parameter order."""
    names = list(SPACES[key]["params"])
    if tool == "ksweep":
        return [tuple(cfg[n] for n in names) for cfg in obj]
    if tool == "kt":
        return [tuple(c) for c in obj.list]
    # pyATF: walk the chain of trees (one tree per independent parameter group)
    from pyatf.range import Range

    layer_names = obj._cot_layer_to_tp_name
    groups, layer = [], 0
    for tree in obj.cot:
        root = tree.root
        if root.num_children == 1 and isinstance(root.get_child(0).data, Range):
            groups.append(([layer_names[layer]], [(v,) for v in root.get_child(0).data]))
            layer += 1
            continue
        rows: list[tuple] = []

        def walk(node, path):
            if node.num_children == 0:
                rows.append(path)
                return
            for child in node:
                walk(child, path + (child.data,))

        walk(root, ())
        depth = len(rows[0]) if rows else 0
        groups.append((layer_names[layer : layer + depth], rows))
        layer += depth
    out = []
    for parts in itertools.product(*(rows for _, rows in groups)):
        cfg = {}
        for (gnames, _), part in zip(groups, parts):
            cfg.update(zip(gnames, part))
        out.append(tuple(cfg[n] for n in names))
    return out


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def worker(tool: str, key: str, mode: str) -> dict:
    t0 = time.perf_counter()
    _import(tool)
    import_s = time.perf_counter() - t0
    build = _prepare(tool, key)
    gc.collect()
    rss_before = _rss_mb()
    if mode == "tracemalloc":
        import tracemalloc

        tracemalloc.start()
    t0 = time.perf_counter()
    obj = build()
    build_s = time.perf_counter() - t0
    out = {"tool": tool, "space": key, "mode": mode, "import_s": import_s, "build_s": build_s}
    if mode == "tracemalloc":
        out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    out["valid"] = _count(tool, obj)
    out["rss_before_mb"] = rss_before
    out["maxrss_mb"] = _maxrss_mb()
    out["peak_delta_mb"] = out["maxrss_mb"] - rss_before
    if mode == "configs":
        configs = sorted(_configs(tool, key, obj))
        out["n_configs"] = len(configs)
        out["distinct"] = len(set(configs))
        out["sha256"] = hashlib.sha256(repr(configs).encode()).hexdigest()
    return out


# -- the driver -------------------------------------------------------------------------


def run_worker(tool: str, key: str, mode: str = "time", timeout: float = 900) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", tool, key, mode]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} on {key} ({mode}) failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def brute_force(key: str) -> tuple[int, str]:
    """Plain-Python reference: every raw config, every constraint, eval'd."""
    sp = SPACES[key]
    names = list(sp["params"])
    code = [compile(c, c, "eval") for c in sp["constraints"]]
    valid = []
    for combo in itertools.product(*sp["params"].values()):
        env = dict(zip(names, combo))
        if all(eval(c, {"__builtins__": {}}, env) for c in code):  # noqa: S307
            valid.append(combo)
    valid.sort()
    return len(valid), hashlib.sha256(repr(valid).encode()).hexdigest()


def machine() -> dict:
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "")
    except OSError:
        pass

    def version(mod):
        try:
            from importlib.metadata import version as v

            return v(mod)
        except Exception:  # noqa: BLE001
            return "?"

    return {
        "nproc": os.cpu_count(),
        "cpu": model or platform.processor(),
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "ksweep": version("ksweep"),
        "pyatf": version("pyatf"),
        "kernel_tuner": version("kernel_tuner"),
        "python-constraint2": version("python-constraint2"),
    }


def _fmt_s(x: float) -> str:
    return f"{x:.4f}" if x < 10 else f"{x:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per (space, tool); median reported")
    ap.add_argument("--spaces", default="a,b,c", help="comma-separated subset of a,b,c")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of ksweep,pyatf,kt")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    ap.add_argument("--verify-configs", action="store_true", help="also compare the full sets of valid configs")
    ap.add_argument("--worker", nargs=3, metavar=("TOOL", "SPACE", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return 0

    keys = [k.strip() for k in args.spaces.split(",") if k.strip()]
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    for k in keys:
        if k not in ("a", "b", "c"):
            ap.error(f"unknown space {k!r}")
    for t in tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t!r}")
    log = (lambda *a: print(*a, file=sys.stderr, flush=True))

    load_before = os.getloadavg()
    runs: dict[tuple[str, str], list[dict]] = {(k, t): [] for k in keys for t in tools}
    for r in range(args.repeats):
        for k in keys:
            for t in tools:
                res = run_worker(t, k)
                runs[k, t].append(res)
                log(f"  round {r + 1}/{args.repeats}  {k} {TOOL_LABEL[t]:7s} {res['build_s']:.4f} s  valid={res['valid']}")
    traced = {}
    if "ksweep" in tools:
        for k in keys:
            traced[k] = run_worker("ksweep", k, "tracemalloc")
            log(f"  tracemalloc  {k} ksweep peak {traced[k]['tracemalloc_peak_mb']:.1f} MB")

    ok = True
    rows = []
    for k in keys:
        sp = SPACES[k]
        raw = raw_size(k)
        counts = {t: {res["valid"] for res in runs[k, t]} for t in tools}
        all_counts = set().union(*counts.values())
        agree = len(all_counts) == 1
        expected_raw, expected_valid = sp["expect"]
        if not agree or raw != expected_raw or all_counts != {expected_valid}:
            ok = False
        med = {t: statistics.median(res["build_s"] for res in runs[k, t]) for t in tools}
        row = {
            "space": sp["name"],
            "key": k,
            "raw": raw,
            "valid": next(iter(all_counts)) if agree else {TOOL_LABEL[t]: sorted(c) for t, c in counts.items()},
            "counts_agree": agree,
            "median_s": {t: med[t] for t in tools},
            "all_s": {t: [res["build_s"] for res in runs[k, t]] for t in tools},
            "import_s": {t: statistics.median(res["import_s"] for res in runs[k, t]) for t in tools},
            "maxrss_mb": {t: statistics.median(res["maxrss_mb"] for res in runs[k, t]) for t in tools},
            "peak_delta_mb": {t: statistics.median(res["peak_delta_mb"] for res in runs[k, t]) for t in tools},
        }
        others = [med[t] for t in tools if t != "ksweep"]
        if "ksweep" in tools and others:
            row["speedup_vs_faster"] = min(others) / med["ksweep"]
        if k in traced:
            row["ksweep_tracemalloc_peak_mb"] = traced[k]["tracemalloc_peak_mb"]
        rows.append(row)

    # targets (issue 2 item 5): >= 2x the faster other tool on (b) and (c); < 200 MB peak on (c)
    targets = {}
    for row in rows:
        if row["key"] in ("b", "c") and "speedup_vs_faster" in row:
            targets[f"{row['key']}: ksweep >= 2x faster than the faster of pyATF/KT"] = row["speedup_vs_faster"] >= 2
        if row["key"] == "c" and "ksweep" in tools:
            targets["c: ksweep peak memory (ru_maxrss) < 200 MB"] = row["maxrss_mb"]["ksweep"] < 200

    verify = None
    if args.verify_configs:
        verify = verify_configs(keys, tools, log)
        ok = ok and verify["ok"]

    result = {
        "machine": machine(),
        "repeats": args.repeats,
        "loadavg_1m": {"start": round(load_before[0], 2), "end": round(os.getloadavg()[0], 2)},
        "command": "python bench/space_construction.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "rows": rows,
        "targets": targets,
        "verify": verify,
        "counts_ok": ok,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_tables(result, tools)
    return 0 if ok else 1


def verify_configs(keys, tools, log) -> dict:
    out: dict = {"ok": True, "spaces": {}}
    for k in keys + (["a_arith"] if "a" in keys else []):
        entry = {}
        for t in tools:
            res = run_worker(t, k, "configs")
            entry[t] = {"valid": res["valid"], "n_configs": res["n_configs"], "distinct": res["distinct"], "sha256": res["sha256"]}
        if k in ("a", "b", "a_arith"):
            n, digest = brute_force(k)
            entry["brute_force"] = {"valid": n, "n_configs": n, "distinct": n, "sha256": digest}
        digests = {e["sha256"] for e in entry.values()}
        counts = {e["valid"] for e in entry.values()} | {e["n_configs"] for e in entry.values()} | {
            e["distinct"] for e in entry.values()
        }
        good = len(digests) == 1 and len(counts) == 1 and counts == {SPACES[k]["expect"][1]}
        entry["identical"] = good
        out["ok"] = out["ok"] and good
        out["spaces"][k] = entry
        summary = ", ".join(f"{t}={e['valid']}" for t, e in entry.items() if isinstance(e, dict))
        log(f"  verify {k}: {'identical' if good else 'MISMATCH'} ({summary})")
    return out


def print_tables(result: dict, tools) -> None:
    m = result["machine"]
    print(f"machine: {m['nproc']} CPUs, {m['cpu']}; Python {m['python']}, numpy {m['numpy']}; "
          f"ksweep {m['ksweep']}, pyATF {m['pyatf']}, Kernel Tuner {m['kernel_tuner']} "
          f"(python-constraint2 {m['python-constraint2']})")
    load = result["loadavg_1m"]
    print(f"construction time: median of {result['repeats']} fresh processes; imports not timed "
          f"(1-min load average {load['start']} at start, {load['end']} at end)\n")
    head = ["space", "raw", "valid"] + [f"{TOOL_LABEL[t]} s" for t in tools]
    has_speed = "ksweep" in tools and len(tools) > 1
    if has_speed:
        head.append("speedup vs faster")
    if "ksweep" in tools:
        head.append("ksweep peak MB")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
    for row in result["rows"]:
        cells = [row["space"], f"{row['raw']:,}",
                 f"{row['valid']:,}" if row["counts_agree"] else f"MISMATCH {row['valid']}"]
        cells += [_fmt_s(row["median_s"][t]) for t in tools]
        if has_speed:
            cells.append(f"{row['speedup_vs_faster']:.1f}x")
        if "ksweep" in tools:
            cells.append(f"{row['maxrss_mb']['ksweep']:.0f}")
        print("| " + " | ".join(cells) + " |")

    print("\nmemory: ru_maxrss of the fresh process / growth of the peak over RSS just before construction (MB)")
    head = ["space"] + [TOOL_LABEL[t] for t in tools]
    if "ksweep" in tools:
        head.append("ksweep tracemalloc peak")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
    for row in result["rows"]:
        cells = [row["space"]] + [f"{row['maxrss_mb'][t]:.0f} / {row['peak_delta_mb'][t]:+.0f}" for t in tools]
        if "ksweep" in tools:
            cells.append(f"{row['ksweep_tracemalloc_peak_mb']:.1f}")
        print("| " + " | ".join(cells) + " |")

    print("\nimport time, median (s): " + ", ".join(
        f"{TOOL_LABEL[t]} {statistics.median(r['import_s'][t] for r in result['rows']):.3f}" for t in tools))
    print("all runs (s): " + "; ".join(
        f"{r['key']} " + " ".join(f"{TOOL_LABEL[t]}=[{', '.join(_fmt_s(x) for x in r['all_s'][t])}]" for t in tools)
        for r in result["rows"]))
    print("(a): the SMEM round-up is written '& ~127' for all three tools (each accepts it); "
          "the '((x + 127)//128)*128' spelling is cross-checked by --verify-configs.")
    print("pyATF: each constraint is attached to the last parameter (in definition order) it reads.")
    if result["verify"] is not None:
        v = result["verify"]
        print("\nverify-configs: " + ("all tools produce identical sets of valid configs" if v["ok"] else "MISMATCH")
              + " (" + "; ".join(
                  f"{k}: " + ", ".join(f"{t} {e['valid']}" for t, e in entry.items() if isinstance(e, dict))
                  for k, entry in v["spaces"].items()) + ")")
    if result["targets"]:
        print("\ntargets:")
        for name, met in result["targets"].items():
            print(f"  {'MET    ' if met else 'NOT MET'}  {name}")
    if not result["counts_ok"]:
        print("\nERROR: valid counts disagree between tools or with the expected counts")


if __name__ == "__main__":
    sys.exit(main())
