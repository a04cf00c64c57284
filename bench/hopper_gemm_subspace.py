"""Write a copy of examples/hopper_gemm/hopper_gemm.toml whose parameters are narrowed to
some of their own values, beside it (its paths are relative to its folder), for a sweep of a
sub-space: a question the phased sweep could not ask (e.g. fc1 with the tanh GELU: each
schedule with every tile it allows, not only the tiles of the erf GELU's Tier-1 winner).

    python3 bench/hopper_gemm_subspace.py NAME NAME=V1,V2 ... [--only EXPR [--only-shape SHAPE]]   # prints the new spec's path

Each value must be one of the spec's own; the first one given becomes the default. The
configs keep their keys, so the results are those of the same spec's configs. --only EXPR
adds a constraint (the spec's expression language) that keeps only the configs for which
EXPR holds: two configs to compare need not bring every combination of their values.
--only-shape SHAPE applies it to that shape alone (where EXPR names a shape's own switch,
such as fc2's SPLIT_K).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SPEC = Path(__file__).resolve().parent.parent / "examples" / "hopper_gemm" / "hopper_gemm.toml"


def narrow(text: str, name: str, values: list[str]) -> str:
    line = re.compile(rf"^({re.escape(name)} = \{{ values = )\[([^\]]*)\](, default = )([^,}}]+)(.*)$", re.M)
    m = line.search(text)
    if not m:
        raise SystemExit(f"{name}: not a parameter of {SPEC.name}")
    own = [v.strip() for v in m.group(2).split(",")]
    for v in values:
        if v not in own:
            raise SystemExit(f"{name}={v}: not one of its values {own}")
    return text[:m.start()] + f"{m.group(1)}[{', '.join(values)}]{m.group(3)}{values[0]}{m.group(5)}" + text[m.end():]


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    text = SPEC.read_text()
    items = list(argv[1:])
    options = {}
    for flag in ("--only", "--only-shape"):
        if flag in items:
            i = items.index(flag)
            if i + 1 >= len(items):
                raise SystemExit(f"{flag} needs a value")
            options[flag] = items[i + 1]
            del items[i:i + 2]
    only = options.get("--only")
    if "--only-shape" in options and only is None:
        raise SystemExit("--only-shape goes with --only")
    for item in items:
        name, _, values = item.partition("=")
        text = narrow(text, name, values.split(","))
    if only is not None:
        shape = options.get("--only-shape")
        text += ("\n[[constraints]]\nname = \"subspace_only\"\n"
                 + (f"shapes = [{json.dumps(shape)}]\n" if shape else "")
                 + f"expr = {json.dumps(only)}\n"
                 "reason = \"not one of the configs this sub-space compares (--only)\"\n")
    out = SPEC.with_name(f"{argv[0]}.toml")
    out.write_text(text)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
