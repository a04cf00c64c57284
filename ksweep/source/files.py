"""A source file's text as ``ksweep guard`` and ``ksweep init`` read and write it: every byte
kept (what is not UTF-8 comes back as it was), an existing file replaced at once."""

from __future__ import annotations

import os
import tempfile
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


def write_source(path: str | Path, text: str) -> None:
    """Write a text ``read_source`` gave; an existing file is replaced at once (a reader never
    sees half of it), keeping its permissions, and a link is followed."""
    path = Path(path)
    try:
        if not path.exists():
            path.write_bytes(encode_source(text))
            return
        path = path.resolve()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(encode_source(text))
            os.chmod(tmp, path.stat().st_mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise SourceError(f"{path}: cannot write: {exc.strerror or exc}") from None
