"""Sources edited since results were measured (this reads the files, unlike the rest of
report/): a result stores the digest of every file it depends on (its listed sources, the
headers its build read), so a report can say that the source on disk is no longer the one
a result, or the best, was measured on. A sweep then measures them again (docs/cli.md
"Resume"); until it runs, the database holds the other version's results."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Iterable

from ..build.deps import changed
from ..result import Result


def edited_since(results: Iterable[Result]) -> dict[tuple[str, str], tuple[int, int, tuple[str, ...]]]:
    """(variant, shape) -> (results measured before a file they depend on changed, results,
    the names of those files), for the shape × variants that have any."""
    counts: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, {}])
    differs: dict[tuple[str, str], bool] = {}  # (path, digest): each file is read once per call
    for r in results:
        if not r.deps:
            continue
        for path, digest in r.deps:
            if (path, digest) not in differs:
                differs[(path, digest)] = bool(changed([(path, digest)]))
        edited = [path for path, digest in r.deps if differs[(path, digest)]]
        c = counts[(r.variant, r.shape)]
        c[1] += 1
        if edited:
            c[0] += 1
            c[2].update(dict.fromkeys(Path(p).name for p in edited))
    return {g: (n, total, tuple(files)) for g, (n, total, files) in counts.items() if n}


def edited_notes(results: Iterable[Result]) -> list[str]:
    """One line per shape × variant whose results were measured on another version of a file."""
    out = []
    for (variant, shape), (n, total, files) in edited_since(results).items():
        names = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        were = "all" if n == total else f"{n} of the {total}"
        out.append(f"{shape}/{variant}: {names} changed since {were} results shown were measured: they are "
                   f"of the other version (ksweep run measures them on this one; the results it measured "
                   f"before on this one, if any, stand again)")
    return out
