"""The application layer: above every other layer, one module per command, each the
library half of its ``ksweep`` command (as asv's ``asv/commands/<name>.py``), called alike
by the command line and by a script.

``wiring.py`` chooses a spec's run mode and executor (the one place that does);
``sweep.py`` is ``ksweep run`` (``run_sweep``, ``tune``, ``best_result``); ``estimate.py``
what a sweep will cost (``plan --estimate``, ``run --effort``); ``kernel.py`` kernel mode's
``ksweep.tune_kernel`` (not ``ksweep.kt.tune_kernel``, Kernel Tuner's call, above this
layer); ``target.py`` what ``explain``, ``profile`` and ``compare`` share (a spec and its
database, a config resolved and built); the other modules are named for their command.
``ksweep.kt`` sits above this layer, ``ksweep.cli`` above both.
"""
