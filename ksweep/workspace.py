"""Where ksweep keeps a spec's files: ``.ksweep/`` beside the spec (the database, the build
cache, generated kernel wrappers, scratch folders of runs). The one place that says so."""

from __future__ import annotations

from pathlib import Path

FOLDER = ".ksweep"


def workspace(spec) -> Path:
    """The workspace of a spec (anything with a ``root`` folder), or of a folder."""
    root = spec if isinstance(spec, Path) else spec.root
    return Path(root) / FOLDER


def ensure(spec) -> Path:
    """The workspace, made if it is not there, with a ``.gitignore`` that ignores all of it
    (as pytest's cache does): results and builds are not sources, and ``git status`` stays
    quiet. A ``.gitignore`` already there is left as it is."""
    folder = workspace(spec)
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text("# made by ksweep: its database, build cache and scratch files\n*\n")
        except OSError:
            pass
    return folder

