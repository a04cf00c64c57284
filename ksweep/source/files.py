"""A source file's text as ``ksweep guard`` and ``ksweep init`` read it: every byte kept
(what is not UTF-8 comes back as it was when written with ``encode_source``, as
``ksweep/outputs.py`` writes text)."""

from __future__ import annotations

from pathlib import Path

from ..errors import SourceError


def read_source(path: str | Path) -> str:
    """A source's text, every byte kept: what is not UTF-8 comes back as it was when the text
    is encoded with ``encode_source``."""
    try:
        return Path(path).read_bytes().decode("utf-8", "surrogateescape")
    except IsADirectoryError:
        raise SourceError(f"{path}: is a folder, not a source file") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def encode_source(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")
