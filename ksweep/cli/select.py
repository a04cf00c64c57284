"""ksweep select DB --size N=3000: the config the shipped size selector picks, and why;
--validate SIZES measures it at sizes never tuned."""

from __future__ import annotations

import json
import sys

from ..app.select import select, sizes_text as text
from ..app.validate import validate
from .main import count_of, parse_gpus, percent_of


def add_parser(sub) -> None:
    p = sub.add_parser("select", help="the tuned config for any size: the selector an exported header ships, "
                                      "and its regret measured at sizes never tuned")
    p.add_argument("db", help="results database")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="a size (a define or run argument of the shapes that is a number, ARG<i> for the i-th "
                        "run argument); repeat it for each size that differs between the tuned shapes")
    p.add_argument("--gpu", metavar="MODEL",
                   help="the GPU model (its name or a part of it); one never tuned on falls back to the tuned "
                        "model of its architecture, else to each shape's config that travels best")
    p.add_argument("--arch", metavar="SM", help="the GPU's architecture (sm_90, 90 or 9.0), for that fallback")
    p.add_argument("--variant", help="the variant (default: the first)")
    p.add_argument("--cover", type=percent_of("--cover"), metavar="PCT",
                   help="the selector of export --cover PCT (the fewest configs within PCT%% of each shape's best)")
    p.add_argument("--robust", action="store_true", help="the selector of export --robust")
    p.add_argument("--validate", action="append", default=[], metavar="SIZES",
                   help="measure the choice at these sizes (NAME=VALUE[,NAME=VALUE...]; repeatable) against the "
                        "best of a local search around it, and say the regret")
    p.add_argument("--budget", type=count_of("--budget"), default=20, metavar="N",
                   help="--validate: configs measured per size set, the choice included (default 20)")
    p.add_argument("--spec", metavar="SPEC.toml", help="--validate: the spec, when the database does not name it")
    p.add_argument("--gpus", help="--validate: the GPU indices to run on (default: all)")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.set_defaults(handler=run)


WIDE = 0.05  # a loss at the other tuned shape beside the sizes that is worth a measurement


def run(args) -> int:
    options = dict(gpu=args.gpu, arch=args.arch, variant=args.variant, cover=args.cover, robust=args.robust)
    if args.validate:
        done = validate(args.db, args.validate, budget=args.budget, spec=args.spec, gpus=parse_gpus(args.gpus),
                        progress=None if args.json else lambda t: print(f"[ksweep] measuring {t}", file=sys.stderr),
                        **options)
        if args.json:
            print(json.dumps([v.as_json() for v in done], indent=2, default=str))
            return 0
        for line in _validated(done):
            print(line)
        return 0
    chosen = select(args.db, args.size, **options)
    if args.json:
        print(json.dumps(chosen.as_json(), indent=2, default=str))
        return 0
    print(" ".join(f"{k}={v}" for k, v in chosen.params.items()))
    print(f"rule: {chosen.choice.rule}")
    if chosen.refused:
        print(f"refused: the spec's constraints refuse this config at these sizes ({chosen.refused}): "
              f"tune a shape nearer them")
    for line in chosen.choice.extrapolated:
        print(f"extrapolated: {line}")
    if chosen.beside:
        cells = [f"{'not measured' if b.loss is None else f'{100 * b.loss:.1f}%'} at {b.shape}" for b in chosen.beside]
        print(f"loses: {', '.join(cells)} (the tuned shapes nearest these sizes)")
        if any(b.loss is not None and b.loss > WIDE for b in chosen.beside[1:]):
            print(f"  it loses more than {100 * WIDE:g}% at a tuned shape beside these sizes: measure it at them "
                  f"(--validate)")
        elif any(b.loss is None for b in chosen.beside[1:]):
            print("  not measured at a tuned shape beside these sizes: `ksweep run --cross K` measures each shape's "
                  "best at the others")
    for note in chosen.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _validated(done) -> list[str]:
    lines = []
    for v in done:
        head = f"{text(v.sizes)}: " + " ".join(f"{k}={x}" for k, x in v.choice.params.items()) + \
            f" (from shape {v.choice.choice.entry.shape})"
        if v.choice.choice.extrapolated:
            head += " [extrapolated]"
        lines.append(head)
        if v.regret is None:
            lines.append(f"  {v.message or 'nothing ran OK'} ({v.evaluations} configs measured)")
            continue
        best = " ".join(f"{k}={x}" for k, x in (v.best or {}).items())
        lines.append(f"  its value {v.value:.6g}; the best of {v.evaluations} configs measured around it {best}: "
                     f"{v.best_value:.6g}; regret {100 * v.regret:.2f}%")
    scored = [v.regret for v in done if v.regret is not None]
    if scored:
        lines.append(f"within 5% of the best found at {sum(r <= 0.05 for r in scored)} of {len(done)} size sets; "
                     f"worst regret {100 * max(scored):.2f}%")
    return lines
