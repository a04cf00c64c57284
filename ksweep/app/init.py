"""``ksweep init``: a starting spec from a source's ``#ifndef``-guarded defines and ``#ifdef``
switches (``source/starter.py``), its build command for this host's GPU."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import KsweepError
from ..run.gpus import local_arch
from ..source.files import read_source, write_source
from ..source.starter import starter_spec


def starter(file: str | Path, output: str | Path | None = None, force: bool = False) -> str:
    """The starting spec of the source ``file``, its sources named relative to where it will be
    written (``output``, else the current folder); an existing ``output`` is refused unless
    ``force``."""
    source = Path(file)
    out = Path(output) if output else None
    if out is not None and out.is_dir():  # --force would not replace a folder either
        raise KsweepError(f"-o {out}: is a folder: give the spec's file name, e.g. -o {out / (source.stem + '.toml')}")
    if out is not None and not out.parent.is_dir():
        raise KsweepError(f"-o {out}: {out.parent} is not a folder: give another -o" if out.parent.exists() else
                          f"-o {out}: the folder {out.parent} does not exist: make it first, or give another -o")
    text = read_source(source)
    if out is not None and out.exists() and not force:
        raise KsweepError(f"{out} exists: give --force to replace it, or another -o")
    folder = (out.parent if out is not None else Path.cwd()).resolve()
    named = Path(os.path.relpath(source.resolve(), folder)).as_posix()
    arch = local_arch() if source.suffix.lower() == ".cu" else None
    return starter_spec(text, named, arch=arch, arch_note="the local GPU" if arch else "",
                        spec_name=out.name if out is not None else None)


def write(path: str | Path, spec: str) -> None:
    """Write the spec (its line endings as they are)."""
    write_source(path, spec)
