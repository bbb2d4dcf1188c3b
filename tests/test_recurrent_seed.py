"""Recurrent seeds: nn.LSTM and nn.GRU replaced by our layers (CPU: Triton's interpreter)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import torch

from kernelevolve.eval.static.checks import check_source
from kernelevolve.platforms import load_platform
from kernelevolve.types import EvalRequest, EvalSettings, KernelSpec, Status
from kernelevolve.variation.recurrent_seed import RecurrentSeedOperator, recurrent_candidate
from kernelevolve.variation.recurrent_source import STEPS_GRID, STEPS_PER_STEP
from tests.gpu import gpu_platform_name, needs_cuda
from tests.proposal_context import seed_context
from tests.source_module import build_for_hopper, load_source

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

# KernelBench's L3/35 in small: batch-first LSTM, random initial states drawn in forward, a Linear after
LSTM_REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size):
        super(Model, self).__init__()
        self.hidden_size, self.num_layers = hidden_size, num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=BIDIRECTIONAL)
        self.fc = nn.Linear(hidden_size * (2 if BIDIRECTIONAL else 1), output_size)

    def forward(self, x):
        directions = 2 if BIDIRECTIONAL else 1
        h0 = torch.randn(self.num_layers * directions, x.size(0), self.hidden_size, device=x.device)
        c0 = torch.randn(self.num_layers * directions, x.size(0), self.hidden_size, device=x.device)
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])

batch_size, sequence_length = 3, 6

def get_inputs():
    return [torch.rand(batch_size, sequence_length, 8)]

def get_init_inputs():
    return [8, 16, 2, 5]
"""

# KernelBench's L3/39-L3/42 in small: sequence-first GRU, initial state an input, output all steps
GRU_REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True):
        super().__init__()
        self.gru = torch.nn.GRU(input_size, hidden_size, num_layers, bias, False, dropout=0, bidirectional=True)

    def forward(self, x, h0):
        output, h_n = self.gru(x, h0)
        return output

seq_len, batch_size, num_layers, hidden_size = 5, 2, 2, 12

def get_inputs():
    return [torch.rand(seq_len, batch_size, 7), torch.rand((num_layers * 2, batch_size, hidden_size))]

def get_init_inputs():
    return [7, hidden_size, num_layers, BIAS]
"""


def _with_tunables(source: str, tunables: dict[str, object]) -> str:
    """`source` with each named tunable's assignment set to the given value."""
    for name, value in tunables.items():
        source, count = re.subn(rf"^{name} = .*$", f"{name} = {value!r}", source, flags=re.MULTILINE)
        assert count == 1, name
    return source


def _pair(
    tmp_path: Path,
    reference: str,
    name: str,
    own_kernels: bool,
    steps: str,
    tunables: dict[str, object] | None = None,
) -> tuple[Any, Any, list[Any]]:
    """The reference's model and the seed's (cuBLAS GEMMs, or our own kernels for everything; the steps
    launched one by one or in one persistent kernel a layer), built alike; `tunables` override the source's."""
    source, replaced = recurrent_candidate(reference, own_kernels)
    default = STEPS_GRID if own_kernels else STEPS_PER_STEP
    assert default in source  # the twin's default: one launch a layer
    source = _with_tunables(source.replace(default, f'RNN_STEPS = "{steps}"'), tunables or {})
    # the own-kernels twin passes the strict checks: no PyTorch compute (GEMMs and Linear layers ours)
    assert replaced and not check_source(source, "triton", own_kernels)
    assert ("Linear" in replaced) == (own_kernels and "nn.Linear(" in reference)
    assert ("nn.Linear(" in source) == ("nn.Linear(" in reference and not own_kernels)
    ref, new = load_source(reference, tmp_path, f"{name}_ref"), load_source(source, tmp_path, f"{name}_new")
    torch.manual_seed(0)
    ref_model = ref.Model(*ref.get_init_inputs()).eval()
    torch.manual_seed(0)
    new_model = new.ModelNew(*ref.get_init_inputs()).eval()
    torch.manual_seed(1)
    return ref_model, new_model, ref.get_inputs()


@pytest.mark.parametrize("steps", ["per_step", "persistent", "grid"])
@pytest.mark.parametrize("own_kernels", [False, True], ids=["cublas", "own_gemm"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_our_lstm_matches_pytorchs_with_the_same_weights(
    interpreter: None, tmp_path: Path, bidirectional: bool, own_kernels: bool, steps: str
) -> None:
    reference = LSTM_REFERENCE.replace("BIDIRECTIONAL", str(bidirectional))
    ref_model, new_model, inputs = _pair(
        tmp_path, reference, f"lstm_{bidirectional}_{own_kernels}_{steps}", own_kernels, steps
    )
    named = [(n, p.shape) for n, p in ref_model.named_parameters()]
    assert named == [(n, p.shape) for n, p in new_model.named_parameters()]
    assert all(torch.equal(a, b) for a, b in zip(ref_model.parameters(), new_model.parameters(), strict=True))
    with torch.no_grad():
        torch.manual_seed(5)  # forward draws the initial states: the same draws on both sides
        expected = ref_model(*inputs)
        torch.manual_seed(5)
        got = new_model(*inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("steps", ["per_step", "persistent", "grid"])
@pytest.mark.parametrize("own_kernels", [False, True], ids=["cublas", "own_gemm"])
@pytest.mark.parametrize("bias", [True, False])
def test_our_bidirectional_gru_matches_pytorchs(
    interpreter: None, tmp_path: Path, bias: bool, own_kernels: bool, steps: str
) -> None:
    reference = GRU_REFERENCE.replace("BIAS", str(bias))
    ref_model, new_model, inputs = _pair(
        tmp_path, reference, f"gru_{bias}_{own_kernels}_{steps}", own_kernels, steps
    )
    assert len(list(new_model.parameters())) == (16 if bias else 8)
    with torch.no_grad():
        expected, got = ref_model(*inputs), new_model(*inputs)
    assert got.shape == expected.shape == (5, 2, 24)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize(
    "tunables",
    [{"RNN_GRID_BLOCK_U": 16, "RNN_GRID_BLOCK_K": 32, "RNN_GRID_DOT": True}, {"RNN_GRID_BLOCK_K": 16}],
    ids=["dot", "summed_products"],
)
def test_the_grid_kernels_split_the_hidden_units_over_programs(
    interpreter: None, tmp_path: Path, kind: str, tunables: dict[str, object]
) -> None:
    """Hidden sizes of several programs' units, the last program's partly masked (40 = 16 + 16 + 8 with
    tl.dot; or 2 a program, the default, summing products over K chunks of 16 with the last partly masked),
    both directions in one launch; the interpreter runs a launch a step, the GPU one launch with a grid
    barrier a direction (its GPU test below)."""
    if kind == "lstm":
        reference = LSTM_REFERENCE.replace("BIDIRECTIONAL", "True").replace(
            "return [8, 16, 2, 5]", "return [8, 40, 2, 5]"
        )
    else:
        reference = GRU_REFERENCE.replace("BIAS", "True").replace(
            "hidden_size = 5, 2, 2, 12", "hidden_size = 5, 2, 2, 40"
        )
    ref_model, new_model, inputs = _pair(tmp_path, reference, f"{kind}_grid", True, "grid", tunables)
    with torch.no_grad():
        torch.manual_seed(5)
        expected = ref_model(*inputs)
        torch.manual_seed(5)
        got = new_model(*inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_the_operator_offers_the_cublas_seed_in_permissive_runs_and_its_own_kernels_twin_in_both() -> None:
    platform = load_platform("cpu")
    spec = KernelSpec(name="gru", reference_source=GRU_REFERENCE.replace("BIAS", "True"))
    seed, own = RecurrentSeedOperator().propose(seed_context(spec, platform))
    assert seed.metadata["recurrent"] == ["GRU"] and "_KeGRU(" in seed.source and "nn.GRU(" not in seed.source
    assert seed.metadata["params"] == {
        "RNN_STEPS": "per_step",  # replayed from a CUDA graph on a GPU
        "RNN_BLOCK": 256,
        "RNN_WARPS": 4,
        "RNN_SEQ_BLOCK_H": 32,
        "RNN_SEQ_BLOCK_K": 64,
        "RNN_SEQ_WARPS": 4,
        "RNN_GRID_BLOCK_U": 2,
        "RNN_GRID_BLOCK_K": 256,
        "RNN_GRID_WARPS": 4,
        "RNN_GRID_DOT": False,
    }
    assert "torch.addmm(" in seed.source and "own_kernels" not in seed.metadata
    assert own.metadata["own_kernels"] and "_matmul(" in own.source and "torch.addmm(" not in own.source
    assert {"RNN_BLOCK", "MM_BLOCK_M", "MM_FP32_PRECISION"} <= set(own.metadata["params"])
    assert own.metadata["params"]["RNN_STEPS"] == "grid"
    assert RecurrentSeedOperator(strict=True).propose(seed_context(spec, platform)) == [own]
    # LSTM and Linear: the twin has both in our kernels
    lstm = KernelSpec(name="lstm", reference_source=LSTM_REFERENCE.replace("BIDIRECTIONAL", "False"))
    (strict_lstm,) = RecurrentSeedOperator(strict=True).propose(seed_context(lstm, platform))
    assert strict_lstm.metadata["recurrent"] == ["LSTM", "Linear"]
    plain = spec.reference_source.replace("torch.nn.GRU", "torch.nn.Linear")
    assert (
        RecurrentSeedOperator().propose(seed_context(KernelSpec(name="x", reference_source=plain), platform))
        == []
    )


def test_on_cuda_the_cublas_seed_comes_first_as_its_graph_replay_then_the_twin_then_itself() -> None:
    """Each seed's evaluation of a full-size LSTM takes over 40 s on the H200: a replay left to the
    graph-replay operator's follow-up waited behind both and the budget ran out."""
    from kernelevolve.eval.static.checks import check_source
    from kernelevolve.variation.graph_replay import GraphReplayOperator, is_graph_replayed

    spec = KernelSpec(name="lstm", reference_source=LSTM_REFERENCE.replace("BIDIRECTIONAL", "False"))
    seed, own = RecurrentSeedOperator().propose(seed_context(spec, load_platform("cpu")))
    platform = load_platform("h200")
    replayed, own_on_gpu, plain = RecurrentSeedOperator().propose(seed_context(spec, platform))
    assert (own_on_gpu, plain) == (own, seed) and not is_graph_replayed(own.source)
    assert is_graph_replayed(replayed.source) and replayed.metadata["graph_replay"]
    assert (replayed.operator, replayed.mode, replayed.parent_ids) == ("recurrent_seed", "seed", ())
    assert replayed.metadata["params"] == seed.metadata["params"]  # still tunable as the seed is
    assert not check_source(replayed.source, "triton", False)
    # the graph-replay operator makes the same child of the plain seed, so it would not add a second one
    assert GraphReplayOperator(strict=False)._child_id(plain) == replayed.id
    assert RecurrentSeedOperator(strict=True).propose(seed_context(spec, platform)) == [own]


def test_a_reference_drawing_random_states_in_forward_passes_the_harness(
    interpreter: None, cpu_evaluator: LocalEvaluator
) -> None:
    """The harness seeds the generator alike before each model's forward (as KernelBench does), so the
    LSTM seed of a reference that draws its initial states in forward can be correct."""
    platform = load_platform("cpu")
    spec = KernelSpec(name="lstm", reference_source=LSTM_REFERENCE.replace("BIDIRECTIONAL", "False"))
    seed, own = RecurrentSeedOperator().propose(seed_context(spec, platform))
    permissive = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1, strict=False)
    strict = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1, strict=True)
    for candidate, settings in ((seed, permissive), (own, strict)):
        report = cpu_evaluator.submit(EvalRequest(candidate, spec, platform.name, settings)).result()
        assert report.status is Status.OK, report.feedback


_HOPPER_BUILD = """
import importlib.util, itertools, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
for kernel, reverse, bias, blocks in itertools.product(
    [module._ke_lstm_sequence_kernel, module._ke_gru_sequence_kernel], [False, True], [False, True], [(32, 64), (64, 128)]
):
    constants = dict(REVERSE=reverse, HAS_B_HH=bias, BLOCK_H=blocks[0], BLOCK_K=blocks[1])
    types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") else "i32" for n in kernel.arg_names}
    indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
    triton.compile(ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32))
for kernel, blocks in itertools.product(
    [module._ke_lstm_grid_kernel, module._ke_gru_grid_kernel], [(16, 64, True), (2, 256, False)]
):
    # the grid barrier (atomics, a spin loop) only compiles when GRID_SYNC is on
    constants = dict(
        HAS_B_HH=True, GRID_SYNC=True, USE_DOT=blocks[2], BLOCK_B=16, BLOCK_U=blocks[0], BLOCK_K=blocks[1]
    )
    types = {
        n: "constexpr" if n in constants else "*i32" if n == "counter_ptr" else "*fp32" if n.endswith("_ptr") else "i32"
        for n in kernel.arg_names
    }
    indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
    compiled = triton.compile(
        ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32), options={"launch_cooperative_grid": True}
    )
    assert compiled.metadata.launch_cooperative_grid  # launched so, the driver co-schedules every program
    ptx = compiled.asm["ptx"]
    # one thread a program counts itself with a release-add and spins on acquire loads (Triton lowers
    # atomic_add(0) with sem="acquire" to one)
    assert "atom.global.gpu.release.add" in ptx, "the barrier's release-add is missing"
    assert "ld.global.gpu.acquire" in ptx, "the barrier's acquire read is missing"
"""


def test_the_persistent_kernels_compile_for_hopper(tmp_path: Path) -> None:
    """The interpreter runs programs one after another and ignores barriers and cache modifiers: this is
    the compiler's word on them, short of a GPU."""
    pytest.importorskip("triton.backends.nvidia.compiler")
    source, _ = recurrent_candidate(LSTM_REFERENCE.replace("BIDIRECTIONAL", "True"), own_kernels=True)
    path = tmp_path / "recurrent_candidate.py"
    path.write_text(source)
    build_for_hopper(_HOPPER_BUILD, str(path), cache=tmp_path / "triton_cache")


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_the_seed_passes_the_harness_on_a_gpu(kind: str) -> None:
    """KernelBench-like sizes (128 steps, 3 layers), through an evaluation child on the GPU."""
    from kernelevolve.eval.local import LocalEvaluator

    platform = load_platform(gpu_platform_name())
    if kind == "lstm":
        reference = (
            LSTM_REFERENCE.replace("BIDIRECTIONAL", "False")
            .replace("batch_size, sequence_length = 3, 6", "batch_size, sequence_length = 10, 128")
            .replace(
                "[torch.rand(batch_size, sequence_length, 8)]",
                "[torch.rand(batch_size, sequence_length, 128)]",
            )
            .replace("return [8, 16, 2, 5]", "return [128, 256, 3, 10]")
        )
    else:
        reference = (
            GRU_REFERENCE.replace("BIAS", "True")
            .replace(
                "seq_len, batch_size, num_layers, hidden_size = 5, 2, 2, 12",
                "seq_len, batch_size, num_layers, hidden_size = 128, 10, 3, 256",
            )
            .replace("torch.rand(seq_len, batch_size, 7)", "torch.rand(seq_len, batch_size, 128)")
            .replace("return [7, hidden_size", "return [128, hidden_size")
        )
    spec = KernelSpec(name=f"{kind}_gpu", reference_source=reference, atol=1e-4, rtol=1e-4)
    # the cuBLAS seed's graph replay (the LSTM draws its states in forward: the replay's draws match
    # eager's after the harness seeds the generator), the twin (our GEMMs, in strict mode), the seed
    replayed, own, seed = RecurrentSeedOperator().propose(seed_context(spec, platform))
    settings = EvalSettings(
        correctness_trials=3, timing_trials=20, warmup_trials=3, measure_compile_baseline=False, strict=False
    )
    # the twin (grid: 2 units a program summing products), its tl.dot tiles, its one-program-a-row kernel
    dot = dataclasses.replace(
        own,
        source=_with_tunables(
            own.source, {"RNN_GRID_BLOCK_U": 16, "RNN_GRID_BLOCK_K": 64, "RNN_GRID_DOT": True}
        ),
    )
    persistent = dataclasses.replace(own, source=own.source.replace(STEPS_GRID, 'RNN_STEPS = "persistent"'))
    assert persistent.source != own.source
    with LocalEvaluator(platform, settings) as evaluator:
        for candidate, strict in (
            (replayed, False),
            (own, True),
            (dot, True),
            (persistent, True),
            (seed, False),
        ):
            request = EvalRequest(
                candidate, spec, platform.name, dataclasses.replace(settings, strict=strict)
            )
            report = evaluator.submit(request).result()
            assert report.status is Status.OK, f"own kernels {strict}: {report.feedback}"
