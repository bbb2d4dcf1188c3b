"""A spec's size may be a range or a list of sizes: it stands for one shape case per representative size,
each with the bucket of sizes it represents; plain lists stay constants' values."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import SpecError, load_spec_file
from kernelevolve.specs.shape_ranges import ShapeRangeError, expand_entry, representatives
from kernelevolve.types import KernelSpec, ShapeCase


def test_a_range_is_spread_geometrically_on_powers_of_two() -> None:
    assert representatives({"range": [128, 8192]}, "seq_len") == [128, 1024, 8192]
    assert representatives({"range": [128, 8192], "points": 4}, "seq_len") == [128, 512, 2048, 8192]
    assert representatives({"range": [100, 300], "points": 2}, "n") == [100, 300]
    assert representatives({"range": [64, 64]}, "n") == [64]
    assert representatives({"values": [2048, 128, 128]}, "n") == [128, 2048]


def test_an_entry_expands_into_named_cases_with_buckets() -> None:
    cases = expand_entry("b1", {"batch": 1, "seq_len": {"range": [128, 8192]}, "bias_shape": [4, 1]})
    assert [name for name, _, _ in cases] == ["b1_seq_len128", "b1_seq_len1024", "b1_seq_len8192"]
    assert [params["seq_len"] for _, params, _ in cases] == [128, 1024, 8192]
    assert all(params["bias_shape"] == [4, 1] and params["batch"] == 1 for _, params, _ in cases)
    buckets = [bucket["seq_len"] for _, _, bucket in cases]
    assert buckets == [[128, 362], [363, 2896], [2897, 8192]]  # every size of the range in one bucket
    two = expand_entry("s", {"b": {"values": [1, 8]}, "n": {"values": [16, 32]}})
    assert [name for name, _, _ in two] == ["s_b1_n16", "s_b1_n32", "s_b8_n16", "s_b8_n32"]
    assert expand_entry("plain", {"n": 4}) == [("plain", {"n": 4}, {})]


@pytest.mark.parametrize(
    "spec",
    [
        {"range": [8192, 128]},
        {"range": [128]},
        {"range": [0, 8]},
        {"range": [1, 8], "values": [2]},
        {"values": [2], "points": 3},
        {"range": [1, 8], "points": 0},
        {"values": []},
        {"range": [1, 8], "step": 2},
    ],
)
def test_bad_ranges_say_what_to_fix(spec: dict) -> None:
    with pytest.raises(ShapeRangeError, match="n:"):
        representatives(spec, "n")


REFERENCE = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return x * 2\n\nbatch = 2\nseq_len = 16\n\ndef get_inputs():\n    return [torch.randn(batch, seq_len)]\n\n"
    "def get_init_inputs():\n    return []\n"
)


def test_a_spec_file_with_a_range_loads_its_cases(tmp_path: Path) -> None:
    (tmp_path / "ref.py").write_text(REFERENCE)
    (tmp_path / "op.yaml").write_text(
        "name: ranged\nreference: ref.py\nshapes:\n  - {name: b2, batch: 2, seq_len: {range: [128, 8192]}}\n"
    )
    spec = load_spec_file(tmp_path / "op.yaml", load_platform("h200"))
    assert [s.params["seq_len"] for s in spec.shapes] == [128, 1024, 8192]
    assert spec.shapes[1].bucket == {"seq_len": [363, 2896]}
    again = KernelSpec.from_json(spec.to_json())
    assert again.shapes == spec.shapes and again.key == spec.key
    assert ShapeCase.from_json({"name": "old", "params": {"n": 1}}).bucket == {}
    (tmp_path / "op.yaml").write_text(
        "name: ranged\nreference: ref.py\nshapes:\n  - {name: b2, seq_len: {range: [128]}}\n"
    )
    with pytest.raises(SpecError, match=r"shapes\[0\]: seq_len: range"):
        load_spec_file(tmp_path / "op.yaml", load_platform("h200"))
