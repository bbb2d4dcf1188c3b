"""Tunables are found by parsing and edited literal by literal; the tuning operator makes valid children."""

from __future__ import annotations

import ast

import pytest

from kernelevolve.platforms import load_platform
from kernelevolve.search.graph import SearchGraph
from kernelevolve.types import Candidate, EvalReport, FitnessValue, KernelSpec, Status
from kernelevolve.variation.tunables import apply_values, current_values, find_tunables
from kernelevolve.variation.tuning import (
    TuningOperator,
    admissible_choices,
    oversized_tile,
    tuned_child,
    undersized_tile,
)
from tests.baselines_graph import graph_with_baselines
from tests.proposal_context import parent_context

SOURCE = """
import triton

BLOCK_SIZE = 1024  # tune: 256, 512, 1024, 2048
GRID_ORDER = "row_major"  # tune: "row_major", "grouped"
TILE_M = 64
EPS = 1e-5


class ModelNew:
    def forward(self, x):
        kernel[(1,)](x, BLOCK=BLOCK_SIZE, num_warps=4, num_stages=2)
        return x
"""


def test_find_declared_and_inferred():
    found = {t.name: t for t in find_tunables(SOURCE)}
    assert found["BLOCK_SIZE"].declared and found["BLOCK_SIZE"].choices == (256, 512, 1024, 2048)
    assert found["GRID_ORDER"].choices == ("row_major", "grouped")
    assert not found["TILE_M"].declared and 32 in found["TILE_M"].choices and 128 in found["TILE_M"].choices
    assert "EPS" not in found
    warps = [t for t in found.values() if t.name.startswith("num_warps@")]
    assert warps and 8 in warps[0].choices


def test_apply_values_edits_only_the_literals():
    warps_name = next(name for name in current_values(SOURCE) if name.startswith("num_warps@"))
    stages_name = next(name for name in current_values(SOURCE) if name.startswith("num_stages@"))
    edited = apply_values(SOURCE, {"BLOCK_SIZE": 256, "GRID_ORDER": "grouped", warps_name: 8, stages_name: 3})
    ast.parse(edited)
    values = current_values(edited)
    assert values["BLOCK_SIZE"] == 256 and values["GRID_ORDER"] == "grouped"
    assert "num_warps=8, num_stages=3" in edited
    assert "# tune: 256, 512, 1024, 2048" in edited
    assert edited.count("\n") == SOURCE.count("\n")


def test_tuning_operator_children_differ_and_keep_lineage():
    graph = SearchGraph()
    parent = Candidate(source=SOURCE, backend="triton", operator="template", metadata={"template": "t"})
    graph.add_candidate(parent)
    graph.record(parent.id, EvalReport(parent.id, Status.OK), FitnessValue(True, 1.0))
    spec = KernelSpec(name="s", reference_source="")
    ctx = parent_context(spec, load_platform("cpu"), graph, parent, budget_hint=4)
    children = TuningOperator().propose(ctx)
    assert len(children) == 4
    assert len({c.id for c in children}) == 4 and parent.id not in {c.id for c in children}
    for child in children:
        assert child.parent_ids == (parent.id,) and child.mode == "tune"
        assert child.metadata["changed"] and child.metadata["template"] == "t"
        ast.parse(child.source)


def test_a_tuned_child_records_the_fp32_precision_it_computes_in() -> None:
    """Sweep records show each candidate's precision: a child says what its own GEMM and convolution use."""
    source = (
        'MM_FP32_PRECISION = "tf32x3"  # tune: "ieee", "tf32x3", "bf16x3"\n'
        'CONV_FP32_PRECISION = "tf32x3"  # tune: "ieee", "tf32x3", "bf16x3"\nBLOCK = 64  # tune: 32, 64\n'
    )
    seed = Candidate(
        source, "triton", "compiler_seed", metadata={"fp32_precision": "tf32x3", "own_kernels": True}
    )
    assert tuned_child(seed, {"BLOCK": 32}).metadata["fp32_precision"] == "tf32x3"
    both = tuned_child(seed, {"MM_FP32_PRECISION": "bf16x3", "CONV_FP32_PRECISION": "bf16x3"})
    assert both.metadata["fp32_precision"] == "bf16x3"
    # the two disagree: the parent's word stands
    assert tuned_child(seed, {"MM_FP32_PRECISION": "ieee"}).metadata["fp32_precision"] == "tf32x3"
    plain = Candidate("BLOCK = 64  # tune: 32, 64\n", "triton", "template", metadata={"template": "t"})
    assert "fp32_precision" not in tuned_child(plain, {"BLOCK": 32}).metadata


def test_one_tf32_pass_is_a_tuning_step_only_where_eagers_tf32_output_met_the_tolerance() -> None:
    source = (
        'LIBRARY_CONV_FP32_PRECISION = "tf32x3"  # tune: "ieee", "tf32x3", "tf32"\n'
        'CONV_FP32_PRECISION = "tf32"  # tune: "ieee", "tf32x3", "bf16x3", "tf32"\n'
        'FP32_PRECISION = "ieee"  # tune: "tf32x3", "ieee", "tf32"\n'
    )

    def choices(graph: SearchGraph) -> dict[str, tuple[str, ...]]:
        return {t.name: t.choices for t in admissible_choices(find_tunables(source), graph)}

    assert choices(graph_with_baselines(1.0, 1.0, True))["LIBRARY_CONV_FP32_PRECISION"] == (
        "ieee",
        "tf32x3",
        "tf32",
    )
    for graph in (graph_with_baselines(1.0, 1.0, False), SearchGraph()):
        kept = choices(graph)
        assert kept["LIBRARY_CONV_FP32_PRECISION"] == ("ieee", "tf32x3")
        assert "tf32" in kept["CONV_FP32_PRECISION"]  # the parent is there already: its own value stays
        assert "tf32" in kept["FP32_PRECISION"]  # a template's GEMM precision: not a convolution's
    graph = graph_with_baselines(1.0, 1.0, False)
    parent = Candidate(source=source, backend="triton", operator="compiler_seed")
    graph.add_candidate(parent)
    graph.record(parent.id, EvalReport(parent.id, Status.OK), FitnessValue(True, 1.0))
    ctx = parent_context(KernelSpec(name="s", reference_source=""), load_platform("cpu"), graph, parent, 8)
    children = TuningOperator(jump_probability=1.0).propose(ctx)
    assert children and all(c.metadata["params"]["LIBRARY_CONV_FP32_PRECISION"] != "tf32" for c in children)


def test_our_own_one_tf32_pass_is_a_tuning_step_only_where_eager_ran_tf32_algorithms() -> None:
    """Eager within tolerance but no faster than its exact run (cuDNN picked no TF32 algorithm): cuDNN's
    one pass stays a step, ours does not (see compiler_seed.OWN_TF32_MIN_EXACT_SLOWDOWN)."""
    source = (
        'LIBRARY_CONV_FP32_PRECISION = "ieee"  # tune: "ieee", "tf32x3", "tf32"\n'
        'CONV_FP32_PRECISION = "bf16x3"  # tune: "ieee", "tf32x3", "bf16x3", "tf32"\n'
    )

    def choices(graph: SearchGraph) -> dict[str, tuple[str, ...]]:
        return {t.name: t.choices for t in admissible_choices(find_tunables(source), graph)}

    no_tf32_algorithm = choices(graph_with_baselines(1.553, 1.554, True))
    assert "tf32" in no_tf32_algorithm["LIBRARY_CONV_FP32_PRECISION"]
    assert no_tf32_algorithm["CONV_FP32_PRECISION"] == ("ieee", "tf32x3", "bf16x3")
    assert "tf32" in choices(graph_with_baselines(1.0, 2.2, True))["CONV_FP32_PRECISION"]


@pytest.mark.parametrize(
    ("status", "error_name", "feedback", "tuned"),
    [
        (Status.OK, "", "", True),
        (Status.TIMEOUT, "Timeout", "", True),
        (Status.COMPILE_ERROR, "OutOfResources", "out of resource: shared memory", True),
        (Status.INCORRECT, "mismatch", "max abs error 3", False),
        (Status.RUNTIME_ERROR, "RuntimeError", "shape '[4, 8]' is invalid for input of size 12", False),
    ],
)
def test_only_parents_that_tuning_can_help_are_tuned(status, error_name, feedback, tuned) -> None:
    graph = SearchGraph()
    parent = Candidate(source=SOURCE, backend="triton", operator="replay")
    graph.add_candidate(parent)
    report = EvalReport(parent.id, status, error_name=error_name, feedback=feedback)
    graph.record(parent.id, report, FitnessValue(status is Status.OK, 1.0 if status is Status.OK else 0.0))
    ctx = parent_context(
        KernelSpec(name="s", reference_source=""), load_platform("cpu"), graph, parent, budget_hint=2
    )
    assert bool(TuningOperator().propose(ctx)) is tuned


REDUCTION_SEED = """
S0_K0_XBLOCK = 1  # tune: 1, 2, 4, 8, 16, 32, 64
S0_K0_R0_BLOCK = 2048  # tune: 256, 512, 1024, 2048, 4096
S0_K0_WARPS = 4  # tune: 1, 2, 4, 8, 16
"""


def test_oversized_tiles_are_measured_per_kernel() -> None:
    assert not oversized_tile({"S0_K0_XBLOCK": 1, "S0_K0_R0_BLOCK": 2048, "S0_K0_WARPS": 4})
    # the H200 child that ran into the 180 s limit: 64 x 2048 elements on 64 threads
    assert oversized_tile({"S0_K0_XBLOCK": 64, "S0_K0_R0_BLOCK": 2048, "S0_K0_WARPS": 2})
    # a large tile is fine with the warps to hold it; another kernel's warps do not count
    assert not oversized_tile({"S0_K0_XBLOCK": 64, "S0_K0_R0_BLOCK": 512, "S0_K0_WARPS": 8})
    assert oversized_tile({"S0_K0_XBLOCK": 64, "S0_K0_R0_BLOCK": 512, "S0_K0_WARPS": 1, "S0_K1_WARPS": 16})
    assert not oversized_tile({"BLOCK_SIZE": 1 << 14, "num_warps@3": 1})  # not a compiler seed's naming


def test_undersized_tiles_are_judged_only_where_tuning_changed_them() -> None:
    # L1/5's 40x and 160x slower children: 8 elements on 128 threads, 2 on 256
    assert undersized_tile({"S0_K0_XBLOCK": 8, "S0_K0_WARPS": 4}, {"S0_K0_XBLOCK": 8})
    assert undersized_tile({"S0_K0_XBLOCK": 2, "S0_K0_WARPS": 8}, {"S0_K0_WARPS": 8})
    assert not undersized_tile(
        {"S0_K0_XBLOCK": 8, "S0_K0_WARPS": 1}, {"S0_K0_WARPS": 1}
    )  # one warp: no fewer
    assert not undersized_tile(
        {"S0_K0_XBLOCK": 1, "S0_K0_R0_BLOCK": 128, "S0_K0_WARPS": 4}, {"S0_K0_WARPS": 4}
    )
    # Inductor's own small tile on K0 does not stop tuning K1
    params = {"S0_K0_XBLOCK": 16, "S0_K0_WARPS": 2, "S0_K1_XBLOCK": 1024, "S0_K1_WARPS": 8}
    assert not undersized_tile(params, {"S0_K1_XBLOCK": 1024})
    assert undersized_tile(params, {"S0_K0_XBLOCK": 16})


def test_tuning_never_proposes_a_tile_that_spills_every_register() -> None:
    graph = SearchGraph()
    parent = Candidate(source=REDUCTION_SEED, backend="triton", operator="compiler_seed")
    graph.add_candidate(parent)
    graph.record(parent.id, EvalReport(parent.id, Status.OK), FitnessValue(True, 1.0))
    operator = TuningOperator(max_changes=2, jump_probability=1.0, attempts=400)
    children = []
    for seed in range(20):
        ctx = parent_context(
            KernelSpec(name="s", reference_source=""),
            load_platform("cpu"),
            graph,
            parent,
            budget_hint=8,
            seed=seed,
        )
        children += operator.propose(ctx)
    assert len({c.id for c in children}) > 20
    assert not any(oversized_tile(c.metadata["params"]) for c in children)
    assert not any(undersized_tile(c.metadata["params"], c.metadata["changed"]) for c in children)
    largest = max(
        c.metadata["params"]["S0_K0_XBLOCK"] * c.metadata["params"]["S0_K0_R0_BLOCK"] for c in children
    )
    assert largest > 4096  # large tiles still come, with the warps to hold them
