"""The one exception tree of ksweep.

Expected failures of a *configuration* (a compile error, a hang, a wrong checksum)
are never exceptions: they are results with a status. Exceptions are for mistakes of
the *user* (a bad spec, a missing file), for a host that cannot run the sweep at all,
and for bugs. Every user-facing exception carries a one-line message that names the
file, the key and the fix; the CLI prints that line and exits with code 2.

    KsweepError                    a user-facing error, one line
    ├── ExprError                  an expression outside the language, or failing to evaluate
    ├── SpecError                  the spec is malformed or inconsistent (names file and key)
    │   └── PlaceholderError       (spec/templates.py) a command names a placeholder nothing fills
    ├── TemplateError              a command template cannot be expanded (also PlaceholderError's base)
    ├── SpaceTooLarge              (space/space.py) len() of a space above 2**63 configs
    ├── NoBudget                   a space too large to sweep without --max-evals or --time-limit
    ├── UnknownStrategy            a strategy name that is not registered
    ├── DatasetError               a recorded-results file that cannot be read
    ├── ExportError                a database that cannot be exported as asked (ksweep export)
    ├── StoreError                 a results database that cannot be opened or is another spec's
    │   └── StoreInUse             another sweep is writing it (names its PID)
    ├── EnvironmentProblem         every config would fail for a reason outside it (no GPU, ...)
    │   └── SystematicFailure      the first configs all failed to compile with the same error
    ├── MissingDependency          an optional dependency is not installed (with the pip line)
    └── SourceError                (source/) a kernel source that cannot be read, guarded or checked as asked
    Interrupted (KeyboardInterrupt) Ctrl-C stopped a sweep; carries what it had evaluated

Low-level errors (OSError, sqlite3, TOML, ast) are translated into these once, where they
happen (``raise SpecError(...) from None``); internal ones (kernel/backend.py's CudaError,
run/protocol.py's ProtocolError) become results or messages before they reach a user.
"""

from __future__ import annotations


class KsweepError(Exception):
    """A user-facing error: its message is one line, fit to print as it is."""


class ExprError(KsweepError):
    """An expression is not in the allowed language, or failed to evaluate.

    Raised without file context; the spec loader re-raises it as a SpecError that
    names the file and key.
    """


class SpecError(KsweepError):
    """The sweep spec is malformed or inconsistent."""

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None):
        self.path = path
        self.key = key
        self.problem = message
        prefix = ""
        if path:
            prefix += f"{path}: "
        if key:
            prefix += f"{key}: "
        super().__init__(prefix + message)


class TemplateError(KsweepError):
    """A command template names a placeholder that does not exist there."""


class NoBudget(KsweepError):
    """A sweep of every config of a space too large to finish: a budget must stop it."""


class UnknownStrategy(KsweepError, ValueError):
    """A search strategy name that is not registered."""


class DatasetError(KsweepError):
    """A recorded-results file cannot be read or is in no known format."""


class ExportError(KsweepError):
    """A database that cannot be exported as asked: nothing valid, or a choice to make
    (--shape, --gpu) that the message names."""


class StoreError(KsweepError):
    """The results database cannot be opened or is not a ksweep database."""


class StoreDamaged(StoreError):
    """The results database's file is damaged: SQLite cannot read all of it."""


class StoreInUse(StoreError):
    """Another sweep is writing this results database."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped a sweep; ``summary`` says what it had evaluated by then."""

    def __init__(self, summary=None):
        super().__init__()
        self.summary = summary


class EnvironmentProblem(KsweepError):
    """Every config would fail the same way for a reason outside the config: no GPU, a
    missing program or module. The sweep stops, and nothing is stored as evaluated."""


class SystematicFailure(EnvironmentProblem):
    """The first configs of a sweep all failed to compile with the same error: a mistake
    of the source or the spec, not of the configs. Nothing of it is stored."""


class MissingDependency(KsweepError):
    """An optional dependency is not installed."""

    def __init__(self, module: str, extra: str, purpose: str):
        super().__init__(
            f"{purpose} needs the Python package '{module}', which is not installed: "
            f"pip install 'ksweep[{extra}]'"
        )
        self.module, self.extra, self.purpose = module, extra, purpose

    def __reduce__(self):  # raised in a worker process, it reaches the parent whole
        return (type(self), (self.module, self.extra, self.purpose))


class SourceError(KsweepError):
    """A kernel source that ``ksweep guard`` or ``ksweep init`` cannot read or rewrite as
    asked (a name it does not define, a build command that does not name it)."""


def require(module: str, extra: str, purpose: str):
    """Import an optional dependency where it is used, with an install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(module.split(".")[0], extra, purpose) from exc
