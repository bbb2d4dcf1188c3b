"""Correctness inputs drawn from other distributions than the reference's own `get_inputs()`.

A reference's `get_inputs()` nearly always draws `torch.randn`, so a kernel is only ever checked on
standard-normal values: a ReLU that is wrong for x > 6, or a softmax that forgets to subtract the row
maximum, passes every check. The final verification of a winner (`app.confirm_winners`) therefore checks
it again on inputs from each distribution its spec lists (`KernelSpec.input_distributions`), each with a
fresh seed and at the spec's own tolerance; `EvalSettings.input_distribution` names the distribution of
one request's correctness inputs.

`distributed_inputs(inputs, distribution, seed)` takes the values `get_inputs()` made (after the harness
moved and cast them) and returns new ones of the same structure. The rules:

* Only floating-point tensors change; everything else (integer and bool tensors such as indices, offsets
  and masks, Python numbers, None) is returned as it was: those carry domain constraints.
* A floating tensor is also kept as it was where its values look like data with a meaning rather than
  random draws: empty, on the meta device, with a non-finite value (a -inf attention mask), all one value
  (`torch.ones`, a one-element scalar), or all whole numbers (labels or a 0/1 mask stored as floats).
* Each changed tensor keeps the original's shape, dtype, device, strides (so its contiguity; an expanded
  dimension stays expanded) and `requires_grad`; values are drawn with a `torch.Generator` on the tensor's
  device seeded from `seed`, the distribution and the tensor's position, so they are deterministic.
* The original's domain is kept: where every original value is >= 0 every new one is (> 0 where every
  original one was), and where every original |value| is <= 1 every new one is (so a (0, 1] input stays in
  (0, 1] and a [-1, 1] one in [-1, 1]). `log`, `sqrt`, `acos` and the like keep working on the new values.
  Other constraints (rows of probabilities that sum to 1, sorted values, a symmetric matrix) are not
  kept: a spec whose reference needs them lists only "normal" in its `input_distributions`.

The distributions (`DISTRIBUTIONS`), for an original x:

* ``normal``: x itself: the reference's `get_inputs()` as written (usually a standard normal).
* ``uniform``: U[-1, 1); U[0, 1) where x >= 0, U(0, 1] where x > 0.
* ``heavy_tailed``: Student's t with 3 degrees of freedom (infinite kurtosis: a few values far beyond
  what a normal draw gives), clipped to +-1000 so no value is infinite; its absolute value where x >= 0;
  where |x| <= 1, sign(t) * exp(-|t|), whose magnitudes span many orders toward 0 within [-1, 1].
* ``large``: 100 * x (beyond every exp() that does not subtract a maximum, and past float16's range
  where values are multiplied and summed); x itself where |x| <= 1, a domain that cannot grow.
* ``small``: x / 1000 (denormal-adjacent products, epsilon terms that dominate).

Everything is clipped to the dtype's finite range, and values that must stay > 0 to the dtype's
smallest normal number, so no infinity and no rounded-away positive value appears.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class InputDistribution:
    """A named distribution for correctness inputs (see the module's docstring for its rules).

    `scale`: its typical magnitude against the inputs as given (100 for ``large``): a tolerance with an
    absolute part was chosen for the given magnitude, and a reader of a failure may want to know it."""

    name: str
    description: str
    scale: float = 1.0


NORMAL = "normal"
DISTRIBUTIONS: dict[str, InputDistribution] = {
    d.name: d
    for d in (
        InputDistribution(NORMAL, "the reference's get_inputs() as written"),
        InputDistribution("uniform", "U[-1, 1), or U[0, 1) / U(0, 1] for non-negative / positive inputs"),
        InputDistribution("heavy_tailed", "Student's t (3 degrees of freedom), clipped to +-1000"),
        InputDistribution("large", "the inputs as given times 100", scale=100.0),
        InputDistribution("small", "the inputs as given divided by 1000", scale=1e-3),
    )
}
DISTRIBUTION_NAMES: tuple[str, ...] = tuple(DISTRIBUTIONS)

LARGE_FACTOR = 100.0
SMALL_FACTOR = 1e-3
HEAVY_TAIL_DOF = 3
HEAVY_TAIL_CLIP = 1e3
_WHOLE_SAMPLE = 1 << 16  # values looked at first to tell a tensor of fractions from one of whole numbers


def get_distribution(name: str) -> InputDistribution:
    """The distribution called `name`; ValueError naming the valid ones for any other name."""
    try:
        return DISTRIBUTIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown input distribution {name!r}; valid: {', '.join(DISTRIBUTION_NAMES)}"
        ) from None


def validate_distribution_names(names: Iterable[Any]) -> tuple[str, ...]:
    """`names` checked and without repeats, "normal" first (always checked: it is what the search uses).
    ValueError, one line listing the valid names, for an unknown one or an empty list."""
    given = list(names)
    unknown = [n for n in given if not isinstance(n, str) or n not in DISTRIBUTIONS]
    if unknown:
        raise ValueError(f"unknown input distribution(s) {unknown}; valid: {', '.join(DISTRIBUTION_NAMES)}")
    if not given:
        raise ValueError(f"no input distributions given; valid: {', '.join(DISTRIBUTION_NAMES)}")
    ordered = dict.fromkeys([NORMAL, *given])
    return tuple(ordered)


def distribution_seed(seed: int, distribution: str) -> int:
    """A fresh seed for checking on `distribution`'s inputs, deterministic in (seed, distribution) and
    never `seed` itself: a winner's final check must not replay the inputs the search already used."""
    fresh = zlib.crc32(f"kernelevolve:{seed}:{distribution}".encode()) % (2**31 - 1) + 1
    return fresh + 1 if fresh == seed else fresh


# A winner's final checks leave one flag per distribution checked on its confirmation's report
# (`winners.with_distribution_checks`): "<outcome>_distribution:<name>".
PASSED = "passed"
FAILED = "failed"
UNCHECKED = "unchecked"  # the check could not run (the evaluator failed): no verdict
_FLAG_SUFFIX = "_distribution:"


def distribution_flag(outcome: str, distribution: str) -> str:
    """The report flag for `outcome` (PASSED, FAILED, UNCHECKED) on `distribution`: "failed_distribution:large"."""
    return f"{outcome}{_FLAG_SUFFIX}{distribution}"


def distribution_outcomes(flags: Iterable[str]) -> dict[str, str]:
    """Distribution name -> outcome, from a report's flags (empty where none was checked)."""
    outcomes: dict[str, str] = {}
    for flag in flags:
        outcome, sep, name = flag.partition(_FLAG_SUFFIX)
        if sep and outcome in (PASSED, FAILED, UNCHECKED):
            outcomes[name] = outcome
    return outcomes


def failed_distributions(flags: Iterable[str]) -> list[str]:
    """The distributions a report's flags say the kernel failed on."""
    return [name for name, outcome in distribution_outcomes(flags).items() if outcome == FAILED]


def distributed_inputs(inputs: list[Any], distribution: str, seed: int) -> list[Any]:
    """`inputs` (what `get_inputs()` made, on their device and dtype) with every floating tensor replaced
    by one drawn from `distribution`, under the rules of this module's docstring. Lists and tuples are
    followed; anything else is returned as it was. ``normal`` returns the inputs as given."""
    get_distribution(distribution)
    if distribution == NORMAL:
        return list(inputs)
    counter = [0]
    return [_map(value, distribution, seed, counter) for value in inputs]


def _map(value: Any, distribution: str, seed: int, counter: list[int]) -> Any:
    import torch

    if isinstance(value, (list, tuple)):
        items = [_map(item, distribution, seed, counter) for item in value]
        if isinstance(value, list):
            return items
        return tuple(items) if type(value) is tuple else type(value)(*items)  # a named tuple
    if not isinstance(value, torch.Tensor):
        return value
    index = counter[0]
    counter[0] += 1
    return _redraw(value, distribution, _leaf_seed(seed, distribution, index))


def _leaf_seed(seed: int, distribution: str, index: int) -> int:
    salt = zlib.crc32(distribution.encode())
    return (seed * 1_000_003 + salt * 10_007 + index * 101 + 29) % (2**63 - 1)


@dataclass(frozen=True)
class _Domain:
    """Where an original tensor's values lie: `lower` is "real", "non_negative" or "positive"; `unit`:
    every |value| <= 1."""

    lower: str
    unit: bool


def _domain(tensor: torch.Tensor) -> _Domain | None:
    """The tensor's domain, or None where it is kept as it was (non-finite, one value, whole numbers).
    Reads the tensor in two reductions where it holds fractions (the usual case), with no full-size copy."""
    import math

    import torch

    low, high = (float(v) for v in torch.aminmax(tensor))  # NaN where any value is NaN
    if not (math.isfinite(low) and math.isfinite(high)) or low == high or _all_whole(tensor):
        return None
    lower = "positive" if low > 0 else "non_negative" if low >= 0 else "real"
    return _Domain(lower, max(abs(low), abs(high)) <= 1.0)


def _all_whole(tensor: torch.Tensor) -> bool:
    import torch

    sample = tensor.reshape(-1)[:_WHOLE_SAMPLE]  # a view for the usual (contiguous) tensor
    if not bool(torch.equal(sample, torch.round(sample))):
        return False
    return bool(torch.equal(tensor, torch.round(tensor)))


def _redraw(tensor: torch.Tensor, distribution: str, seed: int) -> torch.Tensor:
    import torch

    if not tensor.is_floating_point() or tensor.numel() == 0 or tensor.device.type == "meta":
        return tensor
    # Draw for the tensor without its expanded (stride 0) dimensions, then expand again.
    expanded = [size > 1 and stride == 0 for size, stride in zip(tensor.shape, tensor.stride(), strict=True)]
    base = tensor.detach()
    for dim, is_expanded in enumerate(expanded):
        if is_expanded:
            base = base.narrow(dim, 0, 1)
    domain = _domain(base)
    if domain is None:
        return tensor
    work_dtype = torch.float64 if tensor.dtype == torch.float64 else torch.float32
    generator = torch.Generator(device=tensor.device)
    generator.manual_seed(seed)
    values = _values(base, distribution, domain, generator, work_dtype)
    finfo = torch.finfo(tensor.dtype)
    values = values.clamp(-finfo.max, finfo.max).to(tensor.dtype)
    if domain.lower == "positive":
        values = values.clamp_min(finfo.tiny)
    if any(expanded):
        out = values.contiguous().expand(tensor.shape)
    else:
        out = torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=tensor.device)
        out.copy_(values)
    if tensor.requires_grad:
        out.requires_grad_(True)
    return out


def _values(
    base: torch.Tensor,
    distribution: str,
    domain: _Domain,
    generator: torch.Generator,
    work_dtype: torch.dtype,
) -> torch.Tensor:
    import torch

    shape, device = tuple(base.shape), base.device
    original = base.to(work_dtype)
    if distribution == "large":
        return original if domain.unit else original * LARGE_FACTOR
    if distribution == "small":
        return original * SMALL_FACTOR
    if distribution == "uniform":
        u = torch.rand(shape, generator=generator, device=device, dtype=work_dtype)
        if domain.lower == "positive":
            return 1.0 - u  # (0, 1]
        return u if domain.lower == "non_negative" else 2.0 * u - 1.0
    if distribution == "heavy_tailed":
        t = _student_t(shape, generator, device, work_dtype).clamp(-HEAVY_TAIL_CLIP, HEAVY_TAIL_CLIP)
        if domain.unit:
            magnitude = torch.exp(-t.abs())
            return magnitude if domain.lower != "real" else torch.sign(t) * magnitude
        return t if domain.lower == "real" else t.abs()
    raise ValueError(f"input distribution {distribution!r} has no recipe")  # pragma: no cover


def _student_t(
    shape: tuple[int, ...], generator: torch.Generator, device: torch.device, dtype: torch.dtype
) -> torch.Tensor:
    """Student's t with HEAVY_TAIL_DOF degrees of freedom: a normal over sqrt(chi-squared / dof)."""
    import torch

    chi2 = torch.zeros(shape, device=device, dtype=dtype)
    draw = torch.empty(shape, device=device, dtype=dtype)
    for _ in range(HEAVY_TAIL_DOF):
        chi2.add_(draw.normal_(generator=generator).square_())
    chi2.clamp_min_(1e-30).div_(HEAVY_TAIL_DOF).sqrt_()
    return draw.normal_(generator=generator).div_(chi2)
