"""The roofline floor of a spec, each winner's fraction of it in sweep records, and the summary's medians."""

from __future__ import annotations

from kernelevolve.bench.sweep.roofline import roofline_lines, roofline_summary
from kernelevolve.bench.sweep.run import record_from_results
from kernelevolve.eval.roofline import floors_ms, fraction, total_floor_ms
from kernelevolve.platforms import load_platform
from kernelevolve.types import KernelSpec, ShapeCase

_SCALE = """
import torch
import torch.nn as nn

n = 1 << 20


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""


def test_an_elementwise_floor_is_its_bytes_at_peak_bandwidth() -> None:
    platform = load_platform("h200")
    spec = KernelSpec(
        name="scale", reference_source=_SCALE, shapes=(ShapeCase("a"), ShapeCase("b", {"n": 1 << 21}))
    )
    floors = floors_ms(spec, platform)
    moved = 2 * 4 * (1 << 20)  # read and write fp32
    assert abs(floors["a"] - 1e3 * moved / (platform.peak_bandwidth_gbs * 1e9)) < 1e-9
    assert abs(floors["b"] / floors["a"] - 2.0) < 1e-6
    assert total_floor_ms(floors, ["a", "b"]) == floors["a"] + floors["b"]
    assert total_floor_ms(floors, ["a", "missing"]) is None
    assert fraction(1.0, 4.0) == 0.25 and fraction(None, 4.0) is None and fraction(1.0, 0.0) is None


def test_records_carry_each_winners_fraction_and_the_summary_its_median() -> None:
    winner = {"shapes": [{"name": "a", "best_ms": 0.04}], "speedup_vs_eager": 2.0}
    results = {
        "spec": {"shapes": [{"name": "a"}]},
        "roofline_floor_ms": {"a": 0.01},
        "strict": False,
        "best": winner,
        "best_strict": {"shapes": [{"name": "a", "best_ms": 0.05}]},
        "baselines": {},
    }
    record = {**record_from_results(results), "level": 1, "problem": "L1/1"}
    assert record["roofline_floor_ms"] == 0.01 and abs(record["roofline_fraction"] - 0.25) < 1e-12
    assert abs(record["strict"]["roofline_fraction"] - 0.2) < 1e-12
    views = {"permissive": [{**record, "level": 1}]}
    summary = roofline_summary(views)
    assert summary["permissive"]["level 1"] == {"problems": 1, "median": record["roofline_fraction"]}
    text = "\n".join(roofline_lines(summary))
    assert "## Against the roofline floor" in text and "25.0%" in text
    assert roofline_lines(roofline_summary({"strict": []})) == []
