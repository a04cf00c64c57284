"""The size selector on a GPU (docs/benchmarks.md, "Configs for sizes never tuned"): tune
SGEMM (examples/sgemm) at a few sizes, then at sizes never tuned compare the config the
selector picks (``ksweep select``, and with ``--robust``) with the best of a separate sweep
of each size.

    python bench/sizes_sgemm.py OUT [--evals 40] [--tuned-evals N] [--cross K] [--spec examples/sgemm/sgemm.toml]
        [--tuned 'GEMM_M=1024,GEMM_N=1024,GEMM_K=1024;...'] [--untuned '...;...'] [--persistent]
    python bench/sizes_sgemm.py OUT --example flash   (flash attention over SEQ_LEN: FLASH_* below)
    python bench/sizes_sgemm.py OUT --cpu-demo     (no GPU: a gcc program, below)

One call does it all, into OUT: the tuned sweep (OUT/tuned.db, every tuned size), a separate
sweep of the untuned sizes (OUT/untuned.db, the same budget per size), then the selector's
choices (plain and robust) measured at each untuned size in that same database (the
sweep's confirmation compares them with its leaders). Prints a Markdown row per untuned
size (the choice, the shape it came from, the best of the separate sweep, the loss), then
the count within 5%, and the worst loss of the robust configs over the tuned shapes as
``export --robust`` says it and over the untuned sizes. A size's shape is the spec's first
shape with the size's defines and run arguments (export/sizes.py's ``shape_of``).

``--cpu-demo`` runs the same on a gcc program written into OUT whose time is its own formula,
``N / TILE + TILE**2 / 64`` (TILE 4 to 256; tuned at N = 1000, 8000, 64000, 512000; 10 sizes
between never tuned): what the test suite checks, with nothing to measure but the selector.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from ksweep.app.export import export  # noqa: E402
from ksweep.app.select import select  # noqa: E402
from ksweep.app.sweep import run_sweep, with_overrides  # noqa: E402
from ksweep.export.robust import loss  # noqa: E402
from ksweep.export.sizes import parse_sizes, shape_of, sizes_of, text  # noqa: E402
from ksweep.job import config_id  # noqa: E402
from ksweep.spec.load import load_spec  # noqa: E402
from ksweep.store import standings  # noqa: E402
from ksweep.store.sqlite import Store  # noqa: E402
from ksweep.strategies.listed import ListedStrategy  # noqa: E402
from ksweep.sweep.options import SweepOptions  # noqa: E402

SQ = "GEMM_M={0},GEMM_N={0},GEMM_K={0}"
TUNED = ";".join([SQ.format(1024), SQ.format(2048), SQ.format(4096), SQ.format(8192),
                  "GEMM_M=8192,GEMM_N=1024,GEMM_K=1024"])
UNTUNED = ";".join([SQ.format(1536), SQ.format(2560), SQ.format(3072), SQ.format(5120), SQ.format(6144),
                    "GEMM_M=4096,GEMM_N=1024,GEMM_K=1024", "GEMM_M=2048,GEMM_N=4096,GEMM_K=1024",
                    "GEMM_M=4096,GEMM_N=2048,GEMM_K=2048", "GEMM_M=8192,GEMM_N=2048,GEMM_K=1024",
                    "GEMM_M=1024,GEMM_N=4096,GEMM_K=4096"])

# flash attention (examples/flash_attention): batch 4, 8 heads, HEAD_DIM 64, not causal, over the
# sequence length (a define and an argument); 5120 and 6144 lie beyond the tuned range
FLASH = "SEQ_LEN={},HEAD_DIM=64,ARG0=4,ARG1=8,ARG4=0"
FLASH_TUNED = ";".join(FLASH.format(n) for n in (256, 512, 1024, 2048, 4096))
FLASH_UNTUNED = ";".join(FLASH.format(n) for n in (384, 640, 768, 1280, 1536, 2560, 3072, 3584, 5120, 6144))


def top(db: Path, names: list[str], k: int) -> list[dict]:
    """The ``k`` best configs of each shape named (the store's ``top``), without repeats."""
    out: dict[str, dict] = {}
    with Store(db, create=False) as store:
        for name in names:
            for params in standings.top(store, "base", name, k):
                out.setdefault(config_id(params), params)
    return list(out.values())


def listed(spec, db: Path, options: SweepOptions, shape: str, configs: list[dict]) -> None:
    """Measure ``configs`` (those valid there) at one shape of ``spec``, in ``db``, beside
    what is stored: the sweep's confirmation compares them with its leaders."""
    with Store(db, create=True) as store:
        have = len({config_id(r.params) for r in standings.standing(store, "base", shape).results})
    run_sweep(spec, db=db, options=replace(options, shapes=(shape,), max_evals=have + len(configs)),
              strategy_factory=lambda name, space, seed, max_evals: ListedStrategy(space, configs))


def write_matrix(out: Path, dbs) -> None:
    """OUT/matrix.json: for every shape of each database, its sizes and each config's value
    there (as ``standing.value(singles=True)``), keyed by config id."""
    matrix = {}
    for db, stem, sets in dbs:
        with Store(db, create=False) as store:
            for i, values in enumerate(sets):
                standing = standings.standing(store, "base", f"{stem}{i}")
                matrix[f"{stem}{i}"] = {"sizes": dict(values), "direction": standing.objective.direction,
                                        "values": {cid: v.value for cid, v in standing.values(singles=True).items()}}
    (out / "matrix.json").write_text(json.dumps(matrix, indent=1, sort_keys=True))


def shapes(spec, sets: list[dict], stem: str):
    """The spec's first shape at each size set, named ``stem0``, ``stem1``, ..."""
    own = spec.shape_list()
    sizes = sizes_of({s.name: {"defines": dict(s.defines), "args": list(s.args)} for s in own}, [s.name for s in own])
    out = []
    for i, values in enumerate(sets):
        defines, args = shape_of(sizes, own[0].name, values)
        out.append(replace(own[0], name=f"{stem}{i}", defines=defines, args=tuple(args)))
    return tuple(out)


DEMO_PROGRAM = """#include <stdio.h>
int main(void) {
    printf("@@RESULT ms=%.9g\\n", (double)N / TILE + (double)TILE * TILE / 64.0);
    return 0;
}
"""
DEMO_SPEC = """[sweep]
name = "tile"
objective = "ms"
[params]
TILE = [4, 8, 16, 32, 64, 128, 256]
[shapes.n1000]
defines = { N = 1000 }
[build]
sources = ["tile.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "tile.c"]
"""


def demo(out: Path) -> tuple[str, str, str]:
    """The gcc program's spec in ``out``, its tuned and untuned sizes."""
    (out / "tile.c").write_text(DEMO_PROGRAM)
    (out / "tile.toml").write_text(DEMO_SPEC)
    untuned = (1500, 2500, 4000, 6000, 12000, 25000, 40000, 100000, 200000, 350000)
    return str(out / "tile.toml"), "N=1000;N=8000;N=64000;N=512000", ";".join(f"N={n}" for n in untuned)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the folder for the databases")
    p.add_argument("--spec", default=str(HERE / "examples" / "sgemm" / "sgemm.toml"))
    p.add_argument("--tuned", default=TUNED, help="the tuned size sets, ';'-separated")
    p.add_argument("--untuned", default=UNTUNED, help="the size sets never tuned, ';'-separated")
    p.add_argument("--evals", type=int, default=40, help="configs measured per size (default 40)")
    p.add_argument("--tuned-evals", type=int, default=None,
                   help="configs measured per tuned size (default: --evals); a run given more resumes the tuned "
                        "sweep, then measures the new choices beside what the untuned sizes hold")
    p.add_argument("--cpu-demo", action="store_true", help="a gcc program instead of SGEMM (no GPU)")
    p.add_argument("--example", choices=("sgemm", "flash"), default="sgemm",
                   help="flash: the flash-attention example at FLASH_TUNED and FLASH_UNTUNED's sizes")
    p.add_argument("--persistent", action="store_true", help="every config in one host process ([run] persistent)")
    p.add_argument("--cross", type=int, default=0, metavar="K",
                   help="each tuned shape's K best measured at every tuned shape and every untuned size too, "
                        "and every config's value per size written to OUT/matrix.json (what a rule over "
                        "several tuned shapes can be scored on, with no GPU)")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.cpu_demo:
        args.spec, args.tuned, args.untuned = demo(out)
    elif args.example == "flash":
        args.spec = str(HERE / "examples" / "flash_attention" / "flash_attn.toml")
        args.tuned, args.untuned = FLASH_TUNED, FLASH_UNTUNED
    spec = with_overrides(load_spec(args.spec), persistent=True if args.persistent else None)
    tuned = [parse_sizes([s]) for s in args.tuned.split(";") if s.strip()]
    untuned = [parse_sizes([s]) for s in args.untuned.split(";") if s.strip()]
    started = time.monotonic()
    options = SweepOptions(max_evals=args.evals, harden=False)  # the selector is measured, not the sanitizers
    # --cross K: each tuned shape's K best measured at the other tuned shapes (ksweep run --cross)
    run_sweep(replace(spec, shapes=shapes(spec, tuned, "tuned")), db=out / "tuned.db",
              options=replace(options, max_evals=args.tuned_evals or args.evals, cross=args.cross))
    candidates = top(out / "tuned.db", [f"tuned{j}" for j in range(len(tuned))], args.cross)
    swept = time.monotonic()
    at = replace(spec, shapes=shapes(spec, untuned, "at"))
    run_sweep(at, db=out / "untuned.db", options=options)
    picks = [(select(str(out / "tuned.db"), [text(v).replace(" ", ",")]),
              select(str(out / "tuned.db"), [text(v).replace(" ", ",")], robust=True)) for v in untuned]
    # the configs a rule can choose from: each tuned shape's best, measured at every untuned size
    # too, so that the rule's own loss (against the best of them) is told from the search's
    with Store(out / "tuned.db", create=False) as store:
        tuned_bests = [b.params for j in range(len(tuned))
                       if (b := standings.standing(store, "base", f"tuned{j}").best()) is not None]
    for i, (plain, robust) in enumerate(picks):  # the choices, measured beside the sweep's leaders
        wanted = [dict(plain.params), dict(robust.params)]
        more = candidates if args.cross else tuned_bests
        wanted += [dict(c) for c in more if config_id(c) not in {config_id(w) for w in wanted}]
        listed(at, out / "untuned.db", options, f"at{i}", wanted)
    if args.cross:
        write_matrix(out, [(out / "tuned.db", "tuned", tuned), (out / "untuned.db", "at", untuned)])
    direction = spec.objective.direction
    chosen_from = f"tuned shapes' {args.cross} best" if args.cross else "tuned shapes' bests"
    print(f"| sizes | chosen config | from | its {spec.objective.metric} | best of a separate sweep "
          f"({args.evals} configs) | loss | robust: loss | loss against the {chosen_from} there |")
    print("|---|---|---|---|---|---|---|---|")
    losses, robust_losses, rule_losses = [], [], []
    with Store(out / "untuned.db", create=False) as store:
        for i, (values, (plain, robust)) in enumerate(zip(untuned, picks)):
            standing = standings.standing(store, "base", f"at{i}")
            best = standing.best()
            best_value = standing.value(best, singles=True).value if best is not None else None
            row = []
            for chosen in (plain, robust):
                mine = next((r for r in standing.results if config_id(r.params) == config_id(chosen.params)), None)
                value = standing.value(mine, singles=True) if mine is not None else None
                row.append(None if value is None or best_value is None else
                           (value.value, loss(value.value, best_value, direction)))
            losses.append(row[0][1] if row[0] else None)
            robust_losses.append(row[1][1] if row[1] else None)
            ids = {config_id(c) for c in (candidates if args.cross else tuned_bests)}
            there = [v.value for r in standing.results if config_id(r.params) in ids
                     and (v := standing.value(r, singles=True)) is not None]
            best_there = (min(there) if direction == "min" else max(there)) if there else None
            rule_losses.append(None if row[0] is None or best_there is None else
                               loss(row[0][0], best_there, direction))
            words = " ".join(f"{k}={v}" for k, v in plain.params.items())
            cell = lambda r: "not measured" if r is None else f"{100 * r[1]:.1f}%"  # noqa: E731
            print(f"| {text(values)} | {words} | {plain.choice.entry.shape} | "
                  f"{'-' if row[0] is None else f'{row[0][0]:.6g}'} | "
                  f"{'-' if best_value is None else f'{best_value:.6g}'} | {cell(row[0])} | {cell(row[1])} | "
                  f"{cell(None if rule_losses[-1] is None else (None, rule_losses[-1]))} |")
    scored = [x for x in losses if x is not None]
    print(f"\nwithin 5% of the separate sweep's best: {sum(x <= 0.05 for x in scored)} of {len(untuned)} sizes; "
          f"worst loss {100 * max(scored):.1f}%" if scored else "\nno choice ran OK")
    rule_scored = [x for x in rule_losses if x is not None]
    if rule_scored:
        print(f"against the best of the {chosen_from} measured there (the rule's own loss): within 5% at "
              f"{sum(x <= 0.05 for x in rule_scored)} of {len(untuned)}; worst loss {100 * max(rule_scored):.1f}%")
    robust_scored = [x for x in robust_losses if x is not None]
    if robust_scored:
        print(f"robust configs at the untuned sizes: within 5% at {sum(x <= 0.05 for x in robust_scored)} of "
              f"{len(untuned)}; worst loss {100 * max(robust_scored):.1f}%")
    done = export(str(out / "tuned.db"), "json", generator="bench", robust=True)
    head = re.sub(r"^\d+ [a-z ()/]+, ", "", done.out.lines[0])
    print(f"export --robust over the tuned shapes: {head}")
    single = next((line.strip() for line in done.out.lines if "one config for every shape" in line), None)
    if single:
        print(f"export --robust, {single}")
    print(f"\ntuned sweep {swept - started:.0f} s; all {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
