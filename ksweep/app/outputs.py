"""The output files of the commands: checked before any work (``ksweep/outputs.py``) against
what the command reads — a database, its spec, the sources that spec builds — which no
output ever replaces, whatever the flags."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from ..errors import KsweepError
from ..outputs import Output, OutputError, output_file
from ..spec.load import load_spec
from ..spec.model import Spec
from ..store.sqlite import Store

__all__ = ["Output", "OutputError", "checked_output", "db_inputs", "spec_inputs"]


def checked_output(path: str | os.PathLike, *, option: str = "-o", force: bool = False,
                   reads: Iterable[str | os.PathLike] = (), image: bool = False) -> Output:
    """``path`` checked as an output (see ``ksweep/outputs.py``); ``reads``: the files the
    command reads, never written over."""
    return output_file(path, option=option, force=force, protect=tuple(reads), image=image)


def spec_inputs(spec: Spec) -> list[Path]:
    """The spec's file and every source it builds (each variant's, the harness's, kernel mode's)."""
    root = spec.root
    names = list(spec.build.sources)
    if spec.build.harness is not None and spec.build.harness.sources:
        names += spec.build.harness.sources
    for v in spec.variants:
        names += v.sources or ()
    if spec.kernel is not None:
        names.append(str(spec.kernel.source))
    return [p for p in ([spec.path] if spec.path else []) + [root / n for n in names] if p.exists()]


def db_inputs(db: str | os.PathLike) -> list[Path]:
    """A database, the spec it was swept with (its meta) and that spec's sources, as far as
    they can still be found."""
    found = [Path(db)]
    try:
        with Store(db, create=False) as store:
            recorded = store.get_meta("spec")
    except KsweepError:
        return found  # the command's own reading of it says what is wrong
    if recorded and Path(recorded).is_file():
        try:
            found += spec_inputs(load_spec(recorded))
        except KsweepError:
            found.append(Path(recorded))
    return found
