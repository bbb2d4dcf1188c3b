"""The reference's outputs on the correctness trials, computed once per evaluation child and reused.

Every evaluation of a problem checks its candidate on the same seeded trials, and the reference's output
on a trial does not depend on the candidate, yet each check ran the reference again, with the device held:
on GPUs evaluations queue for that lock (`device_wait` was 44% of an evaluation's time on the H200 sample
sweep), so each reference forward saved is throughput. A child keeps the outputs on the device, keyed by
everything that decides them (the spec's key: reference source, mode, precision; shape, weights seed, trial
seeds, device, dtype), up to a
byte budget (`EvalSettings.reference_cache_mb`, least recently used first out).

A reference that carries state between calls (an RNN's hidden state on `self`) gives trial k's output only
after trials 0..k-1 on the same instance, so outputs are kept only once every trial ran, in order, on one
instance: a check stopped early by a wrong candidate completes the rest afterwards (once per key). One whose
calls change its buffers (running statistics) is never kept: its state after each trial is what the
candidate's is checked against (`TrialOutputs.refuse`).
The check gets a copy of each kept output, so nothing a candidate does reaches the kept tensors.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelevolve.eval.correctness import run_reference
from kernelevolve.eval.tensor_guards import clone_tree, tensor_bytes


@dataclass(frozen=True)
class TrialsKey:
    reference_digest: str  # of the spec's key: its reference source, mode, precision, dtype, shapes
    shape: str  # name and parameters
    weights_seed: int
    trial_seeds: tuple[int, ...]
    device: str
    dtype: str


def trials_key(
    spec_key: str, shape: str, weights_seed: int, seeds: Sequence[int], device: str, dtype: Any
) -> TrialsKey:
    digest = hashlib.sha256(spec_key.encode()).hexdigest()
    return TrialsKey(digest, shape, weights_seed, tuple(seeds), device, str(dtype))


class KeptOutputs:
    """Outputs per key, within `budget_bytes` in all; one per evaluation child (`KEPT`)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[TrialsKey, tuple[list[Any], int]] = OrderedDict()
        self._too_big: set[TrialsKey] = set()  # keys whose outputs outgrew the budget: not tried again

    def get(self, key: TrialsKey) -> list[Any] | None:
        entry = self._kept.get(key)
        if entry is None:
            return None
        self._kept.move_to_end(key)
        return entry[0]

    def put(self, key: TrialsKey, outputs: list[Any], size: int, budget_bytes: int) -> None:
        if size > budget_bytes:
            self._too_big.add(key)
            return
        self._kept[key] = (outputs, size)
        while sum(s for _, s in self._kept.values()) > budget_bytes:
            self._kept.popitem(last=False)

    def nbytes(self) -> int:
        return sum(size for _, size in self._kept.values())

    def refuse(self, key: TrialsKey) -> None:
        """Never keep this key's outputs."""
        self._too_big.add(key)

    def worth_keeping(self, key: TrialsKey) -> bool:
        return key not in self._too_big

    def clear(self) -> None:
        self._kept.clear()
        self._too_big.clear()


KEPT = KeptOutputs()


class TrialOutputs:
    """The `expected_for` of one check: kept outputs where there are some, else the reference's, computed
    in trial order and kept once `complete` has run every trial."""

    def __init__(
        self, reference: Callable[..., Any], key: TrialsKey, budget_bytes: int, kept: KeptOutputs = KEPT
    ) -> None:
        self.key, self.budget_bytes, self.kept = key, budget_bytes, kept
        self._run = run_reference(reference)
        self._outputs = kept.get(key)
        self.reused = self._outputs is not None
        self._computed: list[Any] | None = [] if kept.worth_keeping(key) and budget_bytes > 0 else None
        self._bytes = 0

    def __call__(self, trial: int, seed: int, inputs: list[Any]) -> Any:
        if self._outputs is not None:
            return clone_tree(self._outputs[trial])
        output = self._run(trial, seed, inputs)
        if self._computed is not None:
            self._bytes += tensor_bytes(output)
            if trial != len(self._computed) or self._bytes > self.budget_bytes:
                self._computed = None  # out of order, or too big: this key is not kept
                if self._bytes > self.budget_bytes:
                    self.kept.put(self.key, [], self._bytes, self.budget_bytes)  # marks it too big
            else:
                self._computed.append(output)
                return clone_tree(output)  # the check's copy: a candidate cannot touch what is kept
        return output

    def refuse(self) -> None:
        """Keep none of this key's outputs, now or later: the reference's calls change its state, and its
        state after each trial is what a candidate's is checked against, so it must run every time."""
        self._computed = None
        self.kept.refuse(self.key)

    def complete(self, make_inputs: Callable[[int], list[Any]], seeds: Sequence[int]) -> None:
        """Run the trials the check did not reach, in order on the same instance, and keep all of them."""
        if self._outputs is not None or self._computed is None:
            return
        for trial in range(len(self._computed), len(seeds)):
            self(trial, seeds[trial], make_inputs(seeds[trial]))
            if self._computed is None:
                return
        self.kept.put(self.key, self._computed, self._bytes, self.budget_bytes)
        self._outputs, self._computed = self._computed, None
