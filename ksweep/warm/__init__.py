"""Warm start: a search that starts from what earlier searches of the same kernel found.

- ``prior``: the sources (earlier results: another shape, GPU or revision, or a recorded
  dataset) and how their configs map into the space searched now, and the seeds chosen
  from them (pure data; what the strategies read);
- ``transfer``: what the sources say a target config gives, the prior mean of the
  ``surrogate`` strategy's model (pure);
- ``sources``: the prior read from a ksweep database or a recorded dataset, and the check
  of ``--warm-start`` before a sweep (reads files; never imported by a strategy)."""
