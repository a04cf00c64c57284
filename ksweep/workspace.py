"""Where ksweep keeps a spec's files: ``.ksweep/`` beside the spec (the database, the build
cache, generated kernel wrappers, scratch folders of runs). The one place that says so."""

from __future__ import annotations

from pathlib import Path

FOLDER = ".ksweep"


def workspace(spec) -> Path:
    """The workspace of a spec (anything with a ``root`` folder), or of a folder."""
    root = spec if isinstance(spec, Path) else spec.root
    return Path(root) / FOLDER
