"""Content-addressed build cache.

The key covers everything that changes the binary: the compiler's identity (its
``--version`` output; for a Python module run as the compiler, ``python -m MODULE``, the
module's), the full argv (with the output path left as a placeholder), the
build environment, and the contents of every listed source file. A built config lives
in ``CACHE/<key>/`` with its binary and ``meta.json``; it is written to a temporary
folder first and renamed into place, so a crash never leaves a half-built entry.
Compile errors are cached too (they are deterministic); timeouts are not.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from .digest import file_digest
from ..process import pid_alive


@lru_cache(maxsize=None)
def compiler_identity(program: str, *module: str) -> str:
    """``program [-m MODULE] --version`` (first 2000 chars), or the resolved path when that fails."""
    path = shutil.which(program) or program
    try:
        r = subprocess.run([path, *module, "--version"], capture_output=True, text=True, timeout=60)
        ident = (r.stdout + r.stderr).strip()[:2000]
    except (OSError, subprocess.TimeoutExpired):
        ident = ""
    return f"{path} {' '.join(module)}\n{ident}" if module else f"{path}\n{ident}"


def cache_key(argv: Sequence[str], sources: Sequence[Path], env: Mapping[str, str] | None = None,
              extra: str = "") -> str:
    h = hashlib.sha256()
    module = tuple(argv[1:3]) if len(argv) >= 3 and argv[1] == "-m" else ()  # python -m MODULE
    h.update(compiler_identity(argv[0], *module).encode() if argv else b"")
    h.update(b"\0argv\0" + json.dumps(list(argv)).encode())
    h.update(b"\0env\0" + json.dumps(sorted((env or {}).items())).encode())
    for src in sources:
        h.update(b"\0src\0" + str(src).encode() + b"\0" + file_digest(src).encode())
    h.update(b"\0extra\0" + extra.encode())
    return h.hexdigest()[:32]




class BuildCache:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def entry(self, key: str) -> Path:
        return self.root / key

    def lookup(self, key: str) -> dict | None:
        meta = self.entry(key) / "meta.json"
        try:
            return json.loads(meta.read_text())
        except (OSError, ValueError):
            return None

    def scratch(self, key: str) -> Path:
        path = self.root / f"{key}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
        path.mkdir(parents=True)
        return path

    def commit(self, key: str, scratch: Path, meta: dict, replace_stale: bool = False) -> Path:
        """Move a finished build into place. ``replace_stale``: an entry already there whose
        dependencies changed since (build/deps.py) is replaced; else the first one stays."""
        (scratch / "meta.json").write_text(json.dumps(meta))
        final = self.entry(key)
        try:
            os.rename(scratch, final)
        except OSError:  # an entry is there: another build of the same key, or a stale one
            from .deps import unchanged

            old = self.lookup(key)
            if replace_stale and (old is None or not unchanged(old.get("deps", ()))):
                trash = self.root / f"{key}.old-{os.getpid()}-{os.urandom(4).hex()}"
                try:
                    os.rename(final, trash)
                    os.rename(scratch, final)
                except OSError:
                    shutil.rmtree(scratch, ignore_errors=True)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                shutil.rmtree(scratch, ignore_errors=True)
        return final

    def clean_leftovers(self) -> int:
        """Remove the scratch folders of builds whose process is gone (a ``kill -9`` mid-build
        leaves them); returns how many were removed."""
        removed = 0
        try:
            names = os.listdir(self.root)
        except OSError:
            return 0
        for name in names:
            _, sep, rest = name.partition(".tmp-")
            if not sep:
                _, sep, rest = name.partition(".old-")
            pid = rest.split("-", 1)[0]
            if not sep or not pid.isdigit() or pid_alive(int(pid)):
                continue
            shutil.rmtree(self.root / name, ignore_errors=True)
            removed += 1
        return removed

    def discard(self, scratch: Path) -> None:
        shutil.rmtree(scratch, ignore_errors=True)
