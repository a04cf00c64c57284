"""Kernel Tuner's ``tune_kernel`` on ksweep's kernel mode: the same keywords, the same
``(results, env)``, so that moving a tuning script over is one changed import::

    from ksweep.kt import tune_kernel      # was: from kernel_tuner import tune_kernel

The keywords are mapped onto ``ksweep.app.kernel.kernel_tuning_spec`` (grid = ceil(problem
size / grid divisor), the divisor defaulting to the block size names; the block from the
block size names, 256 × 1 × 1 where a name is not tuned; restrictions as expressions or
functions; ``answer`` entries as the checked outputs); what cannot be honoured is refused in
one line (``KtUnsupported``). Above the application layer (``ksweep.app``), which knows
nothing of Kernel Tuner. Not to be confused with ``ksweep.tune_kernel``
(``ksweep.app.kernel``), ksweep's own keywords for the same job.
"""

from ._keywords import KtUnsupported, lang_build
from ._results import CompilationFailedConfig, ErrorConfig, InvalidConfig, RuntimeFailedConfig
from ._tune import tune_kernel

__all__ = ["CompilationFailedConfig", "ErrorConfig", "InvalidConfig", "KtUnsupported", "RuntimeFailedConfig",
           "lang_build", "tune_kernel"]
