"""A file's content digest: the SHA-256 of its bytes, read again only when its size or
modification time changed. The build key (``cache.py``) covers the listed sources by it, the
dependency check (``deps.py``) the files a build read."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path


def file_digest(path: Path) -> str:
    st = os.stat(path)
    return _digest(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4096)
def _digest(path: str, mtime_ns: int, size: int) -> str:  # re-read only when the file changed
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
