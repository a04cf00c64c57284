"""The user's Python that a spec names as ``file.py:function``: a Python constraint, a
kernel's ``args`` and ``reference``. One loader, one way of failing.

The file is found relative to the spec's folder and imported once per process, under the
time limit of the spec's Python code (spec/pycall.py), so that a file that loops or exits
on import is a spec error rather than a hang or an exit. Every problem is one SpecError
line that names the key, the file or the function, and the fix.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from ..errors import SpecError
from .names import did_you_mean
from .pycall import CallClock, PythonTimeout



@dataclass(frozen=True)
class PyFunction:
    """A constraint written in Python: ``file.py:function``.

    The function receives the names its parameters ask for (matched exactly, or
    case-insensitively: ``tn`` gets ``TN``), or, when its only parameter is called
    ``config``, a dict of every name. It returns a bool or ``(bool, reason)``.
    """

    path: Path
    function: str
    fn: Callable = field(repr=False, compare=False)

    def arg_names(self) -> tuple[str, ...]:
        return tuple(inspect.signature(self.fn).parameters)

    def takes_config(self) -> bool:
        params = list(inspect.signature(self.fn).parameters.values())
        return (len(params) == 1 and params[0].name == "config") or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in params
        )


@dataclass(frozen=True)
class PyRef:
    """A ``file.py:function`` whose file exists (not imported yet)."""

    file: str  # as the spec writes it, relative to the spec's folder
    function: str
    path: Path  # the file, resolved


def find_python(ref: Any, root: Path | str, *, key: str, label: str | None = None,
                role: str = "Python") -> PyRef:
    """Check the form of ``file.py:function`` and that the file exists; import nothing.
    ``role`` names the file in messages ("Python constraint file 'x.py' does not exist")."""
    if not isinstance(ref, str) or ":" not in ref:
        raise SpecError(f"expected \"file.py:function\", got {ref!r}", path=label, key=key)
    file, function = ref.rsplit(":", 1)
    path = (Path(root) / file).resolve()
    if not path.is_file():
        raise SpecError(f"{role} file '{file}' does not exist (paths are relative to the spec file)",
                        path=label, key=key)
    return PyRef(file=file, function=function, path=path)


def load_python(ref: Any, root: Path | str, *, key: str, label: str | None = None,
                role: str = "Python") -> PyFunction:
    """The function ``file.py:function`` names, its file imported under the time limit."""
    found = find_python(ref, root, key=key, label=label, role=role)
    module = _import(found, key, label, role)
    fn = getattr(module, found.function, None)
    if not callable(fn):
        defined = [n for n, v in vars(module).items()
                   if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]
        close = did_you_mean(found.function, defined)
        fix = f"did you mean '{close}'?" if close else f"define {found.function}(...) there, or name one it has"
        raise SpecError(f"'{found.file}' has no function '{found.function}': {fix}", path=label, key=key)
    return PyFunction(path=found.path, function=found.function, fn=fn)


def _import(found: PyRef, key: str, label: str | None, role: str) -> ModuleType:
    """The file's module, imported once per process (and again after a failed import)."""
    name = f"ksweep_user_{abs(hash(str(found.path)))}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, found.path)
    module = importlib.util.module_from_spec(spec)

    def error(problem: str) -> SpecError:
        return SpecError(f"importing '{found.file}' {problem}", path=label, key=key)

    clock = CallClock()
    try:
        with clock:
            clock.start()
            spec.loader.exec_module(module)
    except PythonTimeout:
        raise error(f"did not finish within {clock.limit:g} s: a {role} file must only define functions "
                    "(and import what they use)") from None
    except SystemExit as exc:
        raise error(f"called sys.exit({exc.code!r}): a {role} file must only define functions") from None
    except Exception as exc:  # noqa: BLE001 - user code
        raise error(f"failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None
    sys.modules[name] = module
    return module
