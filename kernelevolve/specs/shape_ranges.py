"""Shape ranges: a spec's size given as a range or a list of sizes instead of one value.

In a spec's `shapes` (or `cpu_shapes`), a size constant may be

    seq_len: {range: [128, 8192]}            # representative sizes spread geometrically (3 by default)
    seq_len: {range: [128, 8192], points: 4}
    seq_len: {values: [128, 1024, 8192]}     # these sizes exactly

and the entry stands for one shape case per representative size (per combination, where several constants
are ranges), named `<entry name>_<constant><size>`. The search optimises over all of them, as over any
shape cases. Each case records its bucket: the sizes of the range it stands for (from halfway, in log
terms, to its lower neighbour, to halfway to its upper one), which an exported op can dispatch on.
A plain list value is a constant's value (`bias_shape: [16, 1, 1]`), never a range.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

DEFAULT_POINTS = 3
MAX_CASES = 16  # cases one entry may expand to: a benchmark of hundreds of shapes is a mistake


class ShapeRangeError(ValueError):
    """A range or list of sizes that cannot be used; the message says what to fix."""


def is_ranged(value: Any) -> bool:
    return isinstance(value, Mapping) and bool({"range", "values"} & set(value))


def _ints(values: Any, what: str) -> list[int]:
    if not isinstance(values, list) or not values:
        raise ShapeRangeError(f"{what} must be a non-empty list of sizes, got {values!r}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise ShapeRangeError(f"{what} must hold positive ints, got {values!r}")
    return values


def representatives(spec: Mapping[str, Any], constant: str) -> list[int]:
    """The sizes a `{range: [lo, hi], points: n}` or `{values: [...]}` mapping stands for, ascending."""
    unknown = sorted(set(spec) - {"range", "values", "points"})
    if unknown or ("range" in spec) == ("values" in spec):
        raise ShapeRangeError(
            f"{constant}: give either {{range: [low, high]}} (with points: n) or {{values: [...]}}, got {dict(spec)}"
        )
    if "values" in spec:
        if "points" in spec:
            raise ShapeRangeError(f"{constant}: points goes with range, not values")
        return sorted(set(_ints(spec["values"], f"{constant}: values")))
    bounds = _ints(spec["range"], f"{constant}: range")
    points = spec.get("points", DEFAULT_POINTS)
    if len(bounds) != 2 or bounds[0] > bounds[1]:
        raise ShapeRangeError(f"{constant}: range must be [low, high] with low <= high, got {bounds}")
    if not isinstance(points, int) or isinstance(points, bool) or points < 1:
        raise ShapeRangeError(f"{constant}: points must be a positive int, got {points!r}")
    low, high = bounds
    if points == 1 or low == high:
        return [high]
    # geometric steps from low to high, each rounded to a power of two where one lies between the ends
    ratio = (high / low) ** (1 / (points - 1))
    sizes = {low, high}
    for step in range(1, points - 1):
        size = low * ratio**step
        power = 2 ** round(math.log2(size))
        sizes.add(power if low < power < high else round(size))
    return sorted(sizes)


def buckets(sizes: list[int], spec: Mapping[str, Any]) -> list[tuple[int, int]]:
    """Each representative's bucket [from, to]: split at the geometric midpoints between neighbours; the
    ends are the range's own (a list of values: its smallest and largest)."""
    low, high = (spec["range"][0], spec["range"][1]) if "range" in spec else (sizes[0], sizes[-1])
    cuts = [math.floor(math.sqrt(a * b)) for a, b in itertools.pairwise(sizes)]
    starts = [low, *(c + 1 for c in cuts)]
    ends = [*cuts, high]
    return list(zip(starts, ends, strict=True))


def expand_entry(
    name: str, params: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any], dict[str, list[int]]]]:
    """(case name, plain params, buckets) for each case a shapes entry stands for; one, as given, where no
    constant is ranged."""
    ranged = {k: v for k, v in params.items() if is_ranged(v)}
    if not ranged:
        return [(name, dict(params), {})]
    choices: dict[str, list[tuple[int, tuple[int, int]]]] = {}
    for constant, spec in ranged.items():
        sizes = representatives(spec, constant)
        choices[constant] = list(zip(sizes, buckets(sizes, spec), strict=True))
    combinations = list(itertools.product(*choices.values()))
    if len(combinations) > MAX_CASES:
        raise ShapeRangeError(f"shape {name!r} expands to {len(combinations)} cases; at most {MAX_CASES}")
    cases = []
    for combination in combinations:
        chosen = dict(zip(choices, combination, strict=True))
        suffix = "_".join(f"{constant}{size}" for constant, (size, _) in chosen.items())
        plain = {k: (chosen[k][0] if k in chosen else v) for k, v in params.items()}
        bucket = {constant: [low, high] for constant, (_, (low, high)) in chosen.items()}
        cases.append((f"{name}_{suffix}", plain, bucket))
    return cases
