"""Fresh input values for every timed call, without making every call's inputs in advance.

Timed calls rotate through a few input sets the judge made. Before each call the runner XORs the top
mantissa bits of every floating input of that set with one of a few random patterns (a row broadcast
over the last dimension), chosen per call by a schedule the judge sent. A set's values then differ from
call to call (2**patterns reachable states), so a cache keyed by an input's address or contents saves
nothing, while sign and exponent stay as `get_inputs()` made them (positive inputs stay positive, and
magnitudes stay within a factor of two). The judge knows each set's starting values and the schedule,
so it can rebuild the exact inputs of any call (`inputs_at`) to check that call's output.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

PATTERNS = 12
# (integer view dtype, mantissa bits) per floating dtype; the top three mantissa bits are flipped
_LAYOUT = {
    "float32": ("int32", 23),
    "float64": ("int64", 52),
    "float16": ("int16", 10),
    "bfloat16": ("int16", 7),
}
_FLIPPED_BITS = 3


def refreshable(tensor: torch.Tensor) -> bool:
    return str(tensor.dtype).removeprefix("torch.") in _LAYOUT and tensor.numel() > 0 and tensor.dim() > 0


def make_patterns(leaves: Sequence[torch.Tensor], seed: int) -> list[list[torch.Tensor | None]]:
    """Per pattern, per input leaf: the bits to flip (a row over the last dimension), or None."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    patterns: list[list[torch.Tensor | None]] = []
    for _ in range(PATTERNS):
        row: list[torch.Tensor | None] = []
        for leaf in leaves:
            if not refreshable(leaf):
                row.append(None)
                continue
            view_name, mantissa = _LAYOUT[str(leaf.dtype).removeprefix("torch.")]
            shift = mantissa - _FLIPPED_BITS
            bits = torch.randint(0, 1 << _FLIPPED_BITS, (leaf.shape[-1],), generator=generator) << shift
            row.append(bits.to(getattr(torch, view_name)).to(leaf.device))
        patterns.append(row)
    return patterns


def schedule(seed: int, calls: int) -> list[int]:
    """The pattern applied before each call (call numbers count warm-up calls first)."""
    chooser = random.Random(seed)
    return [chooser.randrange(PATTERNS) for _ in range(calls)]


def forward_seed(seed: int, call: int) -> int:
    """The generator's seed right before timed call `call`'s forward, in the runner and in the judge's check
    of that call alike (`correctness.seed_forward` of it): a reference that draws random numbers in forward
    (dropout in training mode) then draws the same numbers on both sides, so its timed calls can be checked.
    Unseeded, a second reference run differed from the first and the check was skipped, so a candidate was
    free to do no work on every timed call (`tests/adversarial/hacks/stochastic_reference_timed_unchecked`)."""
    return seed * 1_000_033 + 7 * call + 1


def apply(leaves: Sequence[torch.Tensor], pattern: Sequence[torch.Tensor | None]) -> None:
    """Flip the pattern's bits in place (its own inverse). A set whose leaf is longer or shorter in its last
    dimension than the first set's (a jagged batch's values: their count is drawn per seed) takes the row
    repeated or cut to its length, the same on both sides."""
    for leaf, bits in zip(leaves, pattern, strict=True):
        if bits is not None and leaf.numel() > 0:
            view_name = _LAYOUT[str(leaf.dtype).removeprefix("torch.")][0]
            import torch

            length = leaf.shape[-1]
            if bits.shape[0] != length:
                bits = bits.repeat(-(-length // bits.shape[0]))[:length]
            leaf.view(getattr(torch, view_name)).bitwise_xor_(bits)


def inputs_at(
    start: Sequence[torch.Tensor],
    set_count: int,
    set_index: int,
    call: int,
    plan: Sequence[int],
    patterns: Sequence[Sequence[torch.Tensor | None]],
) -> list[torch.Tensor]:
    """Set `set_index`'s leaves as call `call` saw them: its start values (changed in place: a fresh copy
    of a multi-GB input costs the device memory that two problems sharing it lack) with every pattern
    applied to that set up to and including this call (set k serves calls k, k + set_count, ...).

    The patterns are XORed together first (rows of the last dimension) and flipped into the inputs once: one
    pass over a multi-GB input where applying them in turn took one per earlier call (an evaluation's four
    checks held the device lock 0.1-0.2 s on the multi-GB problems; experiments/adversarial_gpu)."""
    leaves = list(start)
    net: list[torch.Tensor | None] = [None] * len(leaves)
    for number in range(set_index, call + 1, set_count):
        for position, bits in enumerate(patterns[plan[number]]):
            if bits is not None:
                held = net[position]
                net[position] = bits.clone() if held is None else held.bitwise_xor_(bits)
    apply(leaves, net)
    return leaves
