"""The reference phase of one shape × variant: the config the others' checks compare with
(``[check] reference = "defaults"``), evaluated (or resumed) before any other and told
first; and the stored results judged again from their metrics when the reference changed,
or stands now after it had failed (the check is a pure function of the metrics: no run).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Mapping

from ..errors import SpecError
from ..job import config_id
from ..run.gpus import Gpu
from ..status import Status
from ..verify.checks import judge, unprinted

from .context import SweepContext

if TYPE_CHECKING:
    from .pipeline import Target


class ReferencePhase:
    def __init__(self, sweep: SweepContext, target: "Target", variant: str, shape: str):
        self.sweep, self.target, self.variant, self.shape = sweep, target, variant, shape
        self.spec, self.mode, self.store = sweep.spec, sweep.mode, sweep.store

    def run(self) -> Mapping[str, float] | None:
        """Judge the stored results against a changed reference, evaluate the reference, and
        judge again what could not be checked before; the reference's metrics (None: it failed)."""
        ref_id = self._reference_id()
        changed = self._reference_changed(ref_id)
        self.target.reference = self._evaluate()
        self._judge_again(ref_id, changed)
        return self.target.reference

    def _reference_id(self) -> str | None:
        """The config id of the reference of checks by metrics (``[check] reference =
        "defaults"``), or None: a mode that compares outputs where they are made cannot have
        its results judged again from stored metrics."""
        if self.spec.check.reference != "defaults" or not self.mode.checks_metrics:
            return None
        reference = self.mode.reference_config(self.spec, {p.name: p.default for p in self.target.space.params})
        return config_id(reference) if reference is not None else None

    def _reference_changed(self, ref_id: str | None) -> bool:
        """Whether the reference config is another one than the stored results were judged
        against (a parameter's default changed): then the new reference's own stored result
        is judged again first, as the reference (by the expected values and bounds alone)."""
        if ref_id is None:
            return False
        changed = self.store.get_meta(f"reference:{self.variant}:{self.shape}") not in (None, ref_id)
        if changed and ref_id in self.target.stored:
            self._judge_stored(ref_id, None, is_reference=True)
        return changed

    def _judge_again(self, ref_id: str | None, changed: bool) -> None:
        """Judge the stored results again, from their stored metrics, against the reference's,
        when the reference config changed, or when they could not be checked (the reference
        had failed) and it now stands."""
        if ref_id is None:
            return
        target = self.target
        # under a check, judge leaves an OK result unverified only when the reference it is checked
        # against had failed (results stored before the verified column existed never stand: their
        # result keys are older than the reference config in the key)
        checkable = self.spec.check.active and target.reference is not None  # the reference stands now
        for cid, old in list(target.standing.items()):
            old = target.stored.get(cid, old)
            if cid != ref_id and (changed or (checkable and old.status is Status.OK and not old.verified)):
                self._judge_stored(cid, target.reference, is_reference=False)
        self.store.set_meta(f"reference:{self.variant}:{self.shape}", ref_id)

    def _judge_stored(self, cid: str, reference: Mapping[str, float] | None, is_reference: bool) -> None:
        target = self.target
        old = target.stored.get(cid) or target.standing[cid]
        if old.status not in (Status.OK, Status.CHECKSUM_MISMATCH):
            return
        job = target.factory.make(dict(old.params))
        gpu = Gpu(old.gpu_index, old.gpu_name or "none", uuid=old.gpu_uuid) if old.gpu_name else None
        status, message, verified = judge(old.metrics, [o.metric for o in self.spec.objective_list()],
                                          self.spec.check, reference, is_reference, False,
                                          self.sweep.record.impossible(job, old.metrics, gpu))
        if (status, message, verified) == (old.status, old.message, old.verified):
            return
        new = replace(old, status=status, message=message, verified=verified)
        self.store.set_verdict(old, status, message, verified)
        if cid not in target.stored:
            return  # not counted: a result outside the space (a list narrowed), or run again (--rerun)
        target.stored[cid] = new
        counts = self.sweep.summary.counts  # it was counted as resumed with its old status
        counts[old.status.value] -= 1
        counts[status.value] = counts.get(status.value, 0) + 1

    def _evaluate(self):
        """Evaluate (or resume) the reference config before any other, and tell it first."""
        space, factory = self.target.space, self.target.factory
        defaults = self.mode.reference_config(self.spec, {p.name: p.default for p in space.params})
        if defaults is None:
            return None
        verdict = space.explain(defaults) if set(defaults) == set(space.names) else None
        if verdict is None or not verdict.ok:
            why = f"{verdict.constraint}: {verdict.reason}" if verdict else "it does not name every parameter"
            raise SpecError(f"the reference config is not valid for shape {factory.shape.name}, variant "
                            f"{factory.variant.name}: {why}", path=self.spec.label, key=self.mode.reference_key)
        job = factory.make(defaults, phase="reference", is_reference=True)
        result = self.target.evaluate_now(job)
        missing = unprinted(result.metrics, self.spec.check)
        if result.status is Status.CHECKSUM_MISMATCH and missing:
            # every config would be compared on a key nobody prints: stop before the sweep spends its budget
            printed = ", ".join(result.metrics) or "nothing"
            raise SpecError(f"the defaults config printed no {', '.join(missing)} to compare the others with (it "
                            f"printed {printed}): name printed metrics in [check] keys", path=self.spec.label,
                            key="check.keys")
        return dict(result.metrics) if result.status is Status.OK else None
