"""Which path serves a call: a searched shape's kernel, or the reference computation.

A call is keyed by its signature, the shape and dtype of each input tensor. The signature of a
searched shape goes to that shape's kernel (checked when loaded, see `custom_op.KernelOp.verify`).
A shape case that stands for a range of sizes (a spec's `{range: ...}`) owns the bucket it recorded:
a signature whose sizes fall in it (read through the case's input layout, `export.range_buckets`) is
tried on that case's kernel, the nearest case's where buckets overlap. Other shapes keep power-of-two
buckets: every dimension rounded up to a power of two, rank and dtypes kept, tried on the nearest
searched (unranged) shape's kernel. A tried signature's first call runs the kernel and the reference
on the caller's own inputs, returns the reference's output, and settles the signature; a kernel that
matched serves that signature from then on, one that raised or differed never does. A signature in
no bucket, and any call on another device type than the platform's, takes the reference.

A kernel is judged in the harness's runner, which a kernel can tell from a caller's process (its file's
folder, TMPDIR): one right there and on each signature's first call here, wrong afterwards, was
shipped (round 23; `tests/adversarial/hacks/export_tell_by_file_path.py`). So every served call is, with chance
1 / `audit_every` drawn from the OS's entropy (nothing a kernel can predict), also run on the reference
and compared; a kernel that differs is switched off like one that raised, that call served by the reference.

`Dispatcher` keeps the record: the path of each recent call (`calls`), counts by path (`counts`),
the verdict of every tried signature (`settled`) and the (config, shape) pairs switched off
(`disabled`, with the reason).
"""

from __future__ import annotations

import collections
import logging
import math
import random
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any, Protocol

log = logging.getLogger(__name__)

REFERENCE_PATH = "reference"
AUDIT_EVERY = 64  # the exported op's default: one served call in 64, on average, is checked
_AUDIT_DRAWS = random.SystemRandom()  # the OS's entropy: no seed or state in the process to read back
Signature = tuple[tuple[tuple[int, ...], str], ...]


def signature(inputs: Sequence[Any]) -> Signature:
    """(shape, dtype) of every input tensor."""
    return tuple((tuple(int(d) for d in t.shape), str(t.dtype)) for t in inputs)


def _round_up(size: int) -> int:
    return 1 << max(size - 1, 0).bit_length()


def bucket(sig: Signature) -> tuple[Any, ...]:
    """The signature with every dimension rounded up to a power of two (4 and 3 share one; 5 does not)."""
    return tuple((tuple(_round_up(d) for d in shape), dtype) for shape, dtype in sig)


def distance(a: Signature, b: Signature) -> float:
    """How far two signatures of one bucket are apart: summed |log2| ratios of their dimensions."""
    return sum(
        abs(math.log2(max(x, 1)) - math.log2(max(y, 1)))
        for (sa, _), (sb, _) in zip(a, b, strict=True)
        for x, y in zip(sa, sb, strict=True)
    )


class RangeBucket(Protocol):
    """A ranged shape case's bucket (`export.range_buckets.RangeLayout`)."""

    @property
    def shape(self) -> str: ...

    @property
    def signature(self) -> Signature: ...

    def contains(self, sig: Signature) -> bool: ...


def kernel_path(shape: str) -> str:
    return f"kernel:{shape}"


def trial_path(shape: str) -> str:
    return f"trial:{shape}"


class Dispatcher:
    """Routes calls by signature (see the module docstring) and records which path served each."""

    def __init__(
        self,
        searched: Mapping[Signature, str],
        device_type: str,
        atol: float,
        rtol: float,
        *,
        ranges: Sequence[RangeBucket] = (),
        history: int = 10_000,
        label: str = "kernel",
        audit_every: int = 0,
    ) -> None:
        self.searched = dict(searched)
        self.audit_every = audit_every  # 0: served calls are never checked after a signature's first
        self.audits: collections.Counter[str] = collections.Counter()  # "passed", "failed"
        self.ranges = tuple(ranges)
        self.device_type = device_type
        self.atol, self.rtol = atol, rtol
        self.label = label
        self.calls: collections.deque[str] = collections.deque(maxlen=history)
        self.counts: collections.Counter[str] = collections.Counter()
        self.disabled: dict[tuple[int, str], str] = {}
        self.settled: dict[tuple[int, Signature], str] = {}  # shape that serves it, or "" (the reference)
        self.reasons: dict[tuple[int, Signature], str] = {}
        self._buckets: dict[tuple[Any, ...], list[tuple[Signature, str]]] = collections.defaultdict(list)
        ranged = {r.signature for r in self.ranges}
        for sig, shape in self.searched.items():
            if sig not in ranged:  # a ranged case serves the bucket it recorded, not a power-of-two one
                self._buckets[bucket(sig)].append((sig, shape))

    def route(self, inputs: Sequence[Any], config: int, available: Container[str]) -> tuple[str | None, bool]:
        """(shape whose kernel would serve these inputs or None for the reference, whether it is a trial)."""
        if not inputs or any(t.device.type != self.device_type for t in inputs):
            return None, False
        sig = signature(inputs)

        def usable(shape: str) -> bool:
            return shape in available and (config, shape) not in self.disabled

        exact = self.searched.get(sig)
        if exact is not None:
            return (exact, False) if usable(exact) else (None, False)
        verdict = self.settled.get((config, sig))
        if verdict is not None:
            return (verdict, False) if verdict and usable(verdict) else (None, False)
        owners = [(r.signature, r.shape) for r in self.ranges if r.contains(sig)]
        candidates = owners if owners else self._buckets.get(bucket(sig), ())
        near = [(distance(sig, s), shape) for s, shape in candidates if usable(shape)]
        if not near:
            return None, False
        return min(near)[1], True

    def run(
        self,
        inputs: Sequence[Any],
        config: int,
        available: Container[str],
        kernel: Callable[[str], Any],
        reference: Callable[[], Any],
        disabling: tuple[type[BaseException], ...] = (),
    ) -> Any:
        """The output for one call: the routed kernel's, the reference's, or (a trial) the reference's
        after comparing the kernel's with it. `disabling`: exceptions of the kernel path that switch
        its shape off and fall back to the reference (others propagate)."""
        shape, trial = self.route(inputs, config, available)
        if shape is None:
            return self._record(REFERENCE_PATH, reference())
        if trial:
            return self._trial(inputs, config, shape, kernel, reference)
        try:
            out = kernel(shape)
        except disabling as exc:
            self._disable(config, shape, str(exc))
            return self._record(REFERENCE_PATH, reference())
        if self.audit_every > 0 and _AUDIT_DRAWS.randrange(self.audit_every) == 0:
            return self._audit(config, shape, out, reference)
        return self._record(kernel_path(shape), out)

    def _audit(self, config: int, shape: str, out: Any, reference: Callable[[], Any]) -> Any:
        """A served call checked after it ran (the kernel cannot tell it from any other): a kernel that
        differs from the reference is switched off and the reference's output returned."""
        from kernelevolve.eval.correctness import within_tolerance

        expected = reference()
        ok, worst = within_tolerance(expected, out, self.atol, self.rtol)
        self.audits["passed" if ok else "failed"] += 1
        if ok:
            return self._record(kernel_path(shape), out)
        self._disable(
            config, shape, f"differed from the reference on a served call (max abs error {worst:.3g})"
        )
        return self._record(REFERENCE_PATH, expected)

    def _disable(self, config: int, shape: str, reason: str) -> None:
        """Switch the kernel of (config, shape) off for good; the reference serves it from now on."""
        self.disabled[(config, shape)] = reason
        log.warning("%s for shape %s disabled: %s", self.label, shape, reason)

    def _trial(
        self,
        inputs: Sequence[Any],
        config: int,
        shape: str,
        kernel: Callable[[str], Any],
        reference: Callable[[], Any],
    ) -> Any:
        from kernelevolve.eval.correctness import within_tolerance

        sig = signature(inputs)
        expected = reference()
        try:
            got = kernel(shape)
        except (
            Exception
        ) as exc:  # a kernel made for other shapes may refuse this one: the reference serves it
            ok, why = False, f"the kernel raised {type(exc).__name__}: {exc}"
        else:
            ok, worst = within_tolerance(expected, got, self.atol, self.rtol)
            why = "" if ok else f"differs from the reference (max abs error {worst:.3g})"
        self.settled[(config, sig)] = shape if ok else ""
        self.reasons[(config, sig)] = why
        if not ok:
            log.info("%s of shape %s not used for inputs %s: %s", self.label, shape, sig, why)
        return self._record(trial_path(shape), expected)

    def _record(self, path: str, out: Any) -> Any:
        self.calls.append(path)
        self.counts[path] += 1
        return out
