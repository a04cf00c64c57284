"""``ksweep init``: a starting spec from a source's ``#ifndef``-guarded defines and ``#ifdef``
switches (``source/starter.py``), its build command for this host's GPU."""

from __future__ import annotations

import os
from pathlib import Path

from ..run.gpus import local_arch
from ..source.files import read_source
from ..source.starter import starter_spec
from .outputs import Output, checked_output


def starter(file: str | Path, output: str | Path | None = None) -> str:
    """The starting spec of the source ``file``, its sources named relative to where it will be
    written (``output``, else the current folder; check it first with ``spec_output``)."""
    source = Path(file)
    text = read_source(source)
    out = Path(output) if output else None
    folder = (out.parent if out is not None else Path.cwd()).resolve()
    named = Path(os.path.relpath(source.resolve(), folder)).as_posix()
    arch = local_arch() if source.suffix.lower() == ".cu" else None
    return starter_spec(text, named, arch=arch, arch_note="the local GPU" if arch else "",
                        spec_name=out.name if out is not None else None)


def spec_output(file: str | Path, output: str | Path, *, force: bool = False) -> Output:
    """Where ``init`` writes the spec of ``file``, checked: never the source being read."""
    return checked_output(output, force=force, reads=[file])
