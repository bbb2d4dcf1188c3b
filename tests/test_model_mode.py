"""The module runs in the mode it is built in (nn.Module's training mode, as KernelBench runs it) unless the
spec says `mode: eval` or `mode: train`, and a candidate must leave the state the reference's call changes
(BatchNorm's running statistics in training mode) as the reference leaves it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import harness, module_state
from kernelevolve.platforms import Platform
from kernelevolve.specs import reference
from kernelevolve.specs.loading import SpecError, load_spec_file
from kernelevolve.types import Candidate, EvalReport, EvalRequest, EvalSettings, KernelSpec, Status


@pytest.fixture(autouse=True)
def _interpreter() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        BACKEND.prepare_process("cpu")
        yield


BATCHNORM_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(4, 3, 5, 5) * 2.0 + 0.5]


def get_init_inputs():
    return [3]
"""

# PyTorch computes BatchNorm in the way the candidate names; a Triton copy carries the result, so the
# launch check sees the candidate's own kernel at work and only the mode and the state differ.
_CANDIDATE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        bn = self.bn
        y = F.batch_norm(x, {running}, bn.weight, bn.bias, training={training}, momentum=0.1, eps=bn.eps)
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 128),)](y, out, y.numel(), BLOCK=128)
        return out
"""
UPDATES_STATS = "bn.running_mean, bn.running_var"
TRAIN_MODE = _CANDIDATE.format(running=UPDATES_STATS, training="True")
EVAL_MODE = _CANDIDATE.format(running=UPDATES_STATS, training="False")
TRAIN_MODE_STATS_UNTOUCHED = _CANDIDATE.format(running="None, None", training="True")


def _evaluate(source: str, mode: str, platform: Platform) -> EvalReport:
    spec = KernelSpec(name=f"bn_{mode}", reference_source=BATCHNORM_REFERENCE, mode=mode)
    settings = EvalSettings(
        correctness_trials=3, timing_trials=3, warmup_trials=1, measure_compile_baseline=False, strict=False
    )
    request = EvalRequest(Candidate(source, "triton", "test"), spec, platform.name, settings)
    return harness.evaluate(request, platform)


def test_as_built_runs_training_mode_batchnorm(cpu_platform: Platform) -> None:
    accepted = _evaluate(TRAIN_MODE, "as_built", cpu_platform)
    assert accepted.status is Status.OK, accepted.feedback
    rejected = _evaluate(EVAL_MODE, "as_built", cpu_platform)
    assert rejected.status is Status.INCORRECT and rejected.error_name == "mismatch", rejected.feedback


def test_mode_eval_reverses_the_verdicts(cpu_platform: Platform) -> None:
    accepted = _evaluate(EVAL_MODE, "eval", cpu_platform)
    assert accepted.status is Status.OK, accepted.feedback
    rejected = _evaluate(TRAIN_MODE, "eval", cpu_platform)
    assert rejected.status is Status.INCORRECT, rejected.feedback


def test_running_statistics_must_be_updated_as_the_reference_does(cpu_platform: Platform) -> None:
    report = _evaluate(TRAIN_MODE_STATS_UNTOUCHED, "as_built", cpu_platform)
    assert report.status is Status.INCORRECT and report.error_name == "state_mismatch", report.feedback
    assert "running_mean" in report.feedback
    assert "in the order it registers them" in report.feedback  # how ModelNew's counterparts are found


def test_kept_reference_outputs_stand_in_only_for_the_same_computation(cpu_platform: Platform) -> None:
    """In one judge: outputs kept from an eval-mode check are not reused in training mode, and a reference
    whose calls change its state runs at every check (its state is what the candidate's is checked against)."""
    assert _evaluate(EVAL_MODE, "eval", cpu_platform).status is Status.OK
    assert _evaluate(TRAIN_MODE, "as_built", cpu_platform).status is Status.OK
    untouched = _evaluate(TRAIN_MODE_STATS_UNTOUCHED, "as_built", cpu_platform)
    assert untouched.status is Status.INCORRECT and untouched.error_name == "state_mismatch", (
        untouched.feedback
    )


def test_construct_leaves_the_constructors_mode_unless_told() -> None:
    module = reference.load_reference(BATCHNORM_REFERENCE)
    built = {
        mode: reference.build_model(module.Model, module, 0, "cpu", None, mode) for mode in reference.MODES
    }
    assert built["as_built"].training and built["train"].training and not built["eval"].training
    with pytest.raises(ValueError, match="unknown model mode"):
        reference.apply_mode(built["eval"], "inference")


def test_changed_buffers_are_found_and_matched_by_name_then_shape() -> None:
    import torch

    module = reference.load_reference(BATCHNORM_REFERENCE)
    model = reference.build_model(module.Model, module, 0, "cpu", torch.float32)
    before = module_state.snapshot(model)
    model(torch.randn(4, 3, 5, 5))
    # (the step count too: integer tensors are state put back before timed calls, never compared)
    assert module_state.changed(model, before) == [
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
    ]

    class Renamed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("mean", torch.zeros(3))
            self.register_buffer("var", torch.ones(3))

    found = module_state.counterparts(
        Renamed(), [("bn.running_mean", (3,)), ("bn.running_var", (3,)), ("x", (7,))]
    )
    assert [t is not None for t in found] == [True, True, False]


def test_counterparts_by_last_name_part_before_order() -> None:
    """A ModelNew holding a norm's state flat, in its own order: `running_var` registered first is still
    the reference's `bn.running_var`; two buffers of one last name leave it to order, as before."""
    import torch

    class Flat(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("running_var", torch.ones(3))
            self.register_buffer("running_mean", torch.zeros(3))

    flat = Flat()
    found = module_state.counterparts(flat, [("bn.running_mean", (3,)), ("bn.running_var", (3,))])
    assert found[0] is flat.running_mean and found[1] is flat.running_var

    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.BatchNorm1d(3)
            self.b = torch.nn.BatchNorm1d(3)

    two = Two()
    found = module_state.counterparts(two, [("bn.running_mean", (3,)), ("bn.running_var", (3,))])
    assert found[0] is two.a.running_mean and found[1] is two.a.running_var


def test_plain_attributes_are_state_matched_by_name_only() -> None:
    """A tensor in a plain attribute that a call replaces is state (KernelBench's VanillaRNN `self.hidden`);
    a candidate's plain attribute stands for it by name, never as a spare of the same shape (it may be a
    constant the kernel needs), while a buffer still may."""
    import torch

    class Rnn(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = torch.zeros(2, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.hidden = torch.tanh(x + self.hidden)
            return self.hidden

    rnn = Rnn()
    before = module_state.snapshot(rnn)
    rnn(torch.ones(2, 3))
    assert module_state.changed(rnn, before) == ["hidden"]

    class Constant(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = torch.ones(2, 3)

    assert module_state.counterparts(Constant(), [("hidden", (2, 3))]) == [None]
    named = Constant()
    named.hidden = torch.zeros(2, 3)
    assert module_state.counterparts(named, [("hidden", (2, 3))])[0] is named.hidden


def test_a_renamed_plain_attribute_stands_for_state_only_where_its_calls_moved_it() -> None:
    """A ModelNew carrying the reference's `hidden` as `h`, beside a same-shaped constant defined first: the
    runner's record of what its checked calls moved picks `h`; the constant is never taken (overwritten
    before each timed call, an honest kernel failed). Numbers match by name and kind."""
    import torch

    class Renamed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shift = torch.zeros(2, 3)
            self.h = torch.zeros(2, 3)
            self.step = 0

    model = Renamed()
    wanted = [("hidden", (2, 3)), ("calls", "int")]
    assert module_state.counterpart_names(model, wanted) == [None, None]
    assert module_state.counterpart_names(model, wanted, frozenset({"h", "step"})) == ["h", "step"]
    assert module_state.counterpart_names(model, [("step", "float")]) == [None]


def test_spec_mode_is_parsed_and_changes_the_key(tmp_path: Path, cpu_platform: Platform) -> None:
    (tmp_path / "ref.py").write_text(BATCHNORM_REFERENCE)
    (tmp_path / "bn.yaml").write_text("name: bn\nreference: ref.py\nmode: eval\n")
    spec = load_spec_file(tmp_path / "bn.yaml", cpu_platform)
    assert spec.mode == "eval"
    assert KernelSpec.from_json(spec.to_json()).mode == "eval"
    assert spec.key != KernelSpec(**{**spec.__dict__, "mode": "as_built"}).key
    (tmp_path / "bad.yaml").write_text("name: bn\nreference: ref.py\nmode: inference\n")
    with pytest.raises(SpecError, match="mode"):
        load_spec_file(tmp_path / "bad.yaml", cpu_platform)
