"""How close a winner is to the platform's limit: the least time any kernel could take at a spec's shape
(the reference's bytes moved and matmul/convolution FLOPs, counted on meta tensors by
`specs.traffic.describe_io`, at the platform's datasheet peaks for the spec's dtype), and the fraction
of that floor a measured time reaches (1.0: at the limit)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kernelevolve.platforms import Platform
from kernelevolve.types import KernelSpec


def floors_ms(spec: KernelSpec, platform: Platform) -> dict[str, float]:
    """Per shape name, the roofline floor in ms; shapes the meta device cannot count are left out."""
    from kernelevolve.specs.traffic import estimate_traffic, peak_key

    if platform.peak_bandwidth_gbs <= 0:
        return {}
    floors: dict[str, float] = {}
    for shape in spec.shapes:
        bytes_moved, flops = estimate_traffic(spec, shape)
        if bytes_moved is None:
            continue
        floors[shape.name] = platform.roofline_floor_ms(bytes_moved, flops or 0.0, peak_key(spec.dtype))
    return floors


def total_floor_ms(floors: Mapping[str, Any], shapes: Iterable[str]) -> float | None:
    """The floors summed over `shapes` (as a record's best_ms sums its shapes' times); None if one is
    missing."""
    values = [floors.get(name) for name in shapes]
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    if not values or len(numbers) != len(values):
        return None
    return sum(numbers)


def fraction(floor_ms: float | None, measured_ms: float | None) -> float | None:
    if floor_ms is None or not measured_ms or measured_ms <= 0:
        return None
    return floor_ms / measured_ms
