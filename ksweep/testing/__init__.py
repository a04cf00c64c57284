"""Test helpers for ksweep and for code that extends it (as ``optuna.testing`` is).

- ``FakeExecutor`` (fake_executor.py): the executor contract (run/base.py) with no process,
  no compiler and no GPU: builds and runs answered from a table, a function, or a recorded
  dataset, so the sweep driver's logic runs in milliseconds.
- ``executor_suite.ExecutorSuite``: the conformance tests every executor must pass.
- ``strategy_suite.StrategySuite``: the conformance tests every search strategy must pass.
- ``backend_suite.BackendSuite``: the conformance tests of a kernel-mode backend's checks
  (outputs and inputs compared where they lie, as numpy compares them).

The two suites are pytest test classes (they import pytest); this package itself does not.
"""

from .fake_executor import FakeExecutor, Planned

__all__ = ["FakeExecutor", "Planned"]
