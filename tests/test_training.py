"""Training specs: the backward field, the training step both sides run, and the harness on it (CPU).

The adversarial cases of a training spec (a wrong, detached, PyTorch-computed or stale backward) are
in tests/adversarial (spec `rmsnorm_train`); here the shipped train_* specs, the step itself, and a
shipped template searched forward + backward through the harness.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import harness
from kernelevolve.paths import SPEC_DIR
from kernelevolve.platforms import Platform, load_platform
from kernelevolve.specs import reference
from kernelevolve.specs.loading import SpecError, load_spec_file, spec_from_mapping
from kernelevolve.specs.training import TrainingStep, judged_source, training_model
from kernelevolve.types import Backward, Candidate, EvalRequest, EvalSettings, KernelSpec, Status

TRAINING_SPECS = sorted(p.stem for p in SPEC_DIR.glob("train_*.yaml"))
CPU = load_platform("cpu")


def _spec(name: str) -> KernelSpec:
    return load_spec_file(SPEC_DIR / f"{name}.yaml", CPU)


def test_eight_training_specs_ship() -> None:
    assert {
        "train_rmsnorm",
        "train_layernorm",
        "train_swiglu",
        "train_gelu_mlp",
        "train_rope",
        "train_softmax_ce",
        "train_fused_linear_ce",
        "train_attention",
    } <= set(TRAINING_SPECS)
    assert all(_spec(name).backward is not None for name in TRAINING_SPECS)


@pytest.mark.parametrize("name", TRAINING_SPECS)
def test_training_reference_runs_forward_and_backward_on_cpu(name: str) -> None:
    """The judge's training step of each shipped spec at its CPU shapes: outputs as the forward reference
    gives them, and gradients equal to autograd's on the forward reference, finite and not all zero."""
    spec = _spec(name)
    dtype = reference.torch_dtype(spec.dtype)
    step_module = reference.load_reference(judged_source(spec))
    forward_module = reference.load_reference(spec.reference_source)
    for shape in spec.shapes:
        reference.apply_shape(step_module, shape)
        reference.apply_shape(forward_module, shape)
        step = reference.build_model(step_module.Model, step_module, 0, "cpu", dtype)
        plain = reference.build_model(forward_module.Model, forward_module, 0, "cpu", dtype)
        arguments = reference.make_inputs(step_module, 3, "cpu", dtype)
        *inputs, upstream = arguments
        assert [x.shape for x in inputs if isinstance(x, torch.Tensor)] == [
            x.shape for x in reference.make_inputs(forward_module, 3, "cpu", dtype)
        ]
        with torch.no_grad():  # the harness calls it so; the step turns gradients on itself
            outputs, input_grads, parameter_grads = step(*arguments)
        tracked = [
            x.detach().requires_grad_(True) if i in _positions(spec, inputs) else x
            for i, x in enumerate(inputs)
        ]
        expected = plain(*tracked)
        leaves = [expected] if isinstance(expected, torch.Tensor) else list(expected)
        wrt = [tracked[i] for i in _positions(spec, inputs)] + [
            dict(plain.named_parameters())[n] for n, _ in step.wanted()
        ]
        grads = torch.autograd.grad(leaves, wrt, list(upstream), allow_unused=True)
        got = list(input_grads) + list(parameter_grads)
        assert len(got) == len(grads) >= 1
        for ours, theirs, target in zip(got, grads, wrt, strict=True):
            assert ours.shape == target.shape and torch.isfinite(ours.float()).all()
            assert torch.equal(ours, theirs), name
        assert any(g.abs().sum() > 0 for g in got), name
        for ours, theirs in zip(
            [outputs] if isinstance(outputs, torch.Tensor) else outputs, leaves, strict=True
        ):
            assert torch.equal(ours, theirs.detach())


def _positions(spec: KernelSpec, inputs: list[object]) -> list[int]:
    assert spec.backward is not None
    if spec.backward.inputs is not None:
        return list(spec.backward.inputs)
    return [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]


def test_upstream_gradients_follow_the_seed_and_are_drawn_after_the_inputs() -> None:
    spec = _spec("train_rmsnorm")
    module = reference.load_reference(judged_source(spec))
    forward = reference.load_reference(spec.reference_source)
    first = reference.make_inputs(module, 5, "cpu", torch.float32)
    again = reference.make_inputs(module, 5, "cpu", torch.float32)
    other = reference.make_inputs(module, 6, "cpu", torch.float32)
    assert torch.equal(first[0], reference.make_inputs(forward, 5, "cpu", torch.float32)[0])
    assert torch.equal(first[1][0], again[1][0]) and not torch.equal(first[1][0], other[1][0])
    assert first[1][0].shape == first[0].shape


def test_backward_field_parses_and_rejects_with_the_choices() -> None:
    base = {"name": "t", "reference_code": "x = 1\n"}

    def parse(value: object) -> Backward | None:
        return spec_from_mapping(
            {**base, "backward": value}, base_dir=Path("."), origin="t", platform=CPU
        ).backward

    assert parse(True) == Backward() and parse(False) is None
    assert parse({"inputs": [0, 2], "parameters": "none"}) == Backward((0, 2), ())
    assert parse({"parameters": ["weight"]}) == Backward(None, ("weight",))
    for bad in ({"inputs": "some"}, {"parameters": 3}, {"grads": True}, "yes"):
        with pytest.raises(SpecError, match="backward"):
            parse(bad)
    spec = _spec("train_softmax_ce")
    assert KernelSpec.from_json(spec.to_json()) == spec
    assert dataclasses.replace(spec, backward=None).key != spec.key


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((4,), 2.0))
        self.bias = torch.nn.Parameter(torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight + self.bias


class _Renamed(torch.nn.Module):
    """ModelNew naming its parameters its own way: matched by shape, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.full((4,), 2.0))
        self.shift = torch.nn.Parameter(torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.shift


def test_step_binds_parameters_by_name_then_shape_and_counts_missing_gradients_as_zeros() -> None:
    backward = Backward().to_json()
    judged = training_model(_Scaled, backward)()
    runner = training_model(_Renamed, backward)()
    runner.bind(judged.wanted())
    x, g = torch.randn(3, 4), torch.randn(3, 4)
    want, got = judged(x, (g,)), runner(x, (g,))
    assert all(torch.equal(a, b) for a, b in zip(want[2], got[2], strict=True))
    assert torch.equal(want[1][0], got[1][0]) and torch.equal(want[1][0], g * 2.0)
    frozen = training_model(_Renamed, backward)()
    frozen.bind([("weight", [4]), ("missing", [7])])
    _, _, (weight_grad, missing_grad) = frozen(x, (g,))
    assert torch.equal(weight_grad, (g * x).sum(0)) and torch.equal(missing_grad, torch.zeros(7))


class _Broadcast(torch.nn.Module):
    """ModelNew keeping its parameters shaped (1, 4) to broadcast: the same elements as the reference's."""

    def __init__(self) -> None:
        super().__init__()
        self.square = torch.nn.Parameter(torch.zeros(2, 2))  # four elements, but not a (4,) layout
        self.scale = torch.nn.Parameter(torch.full((1, 4), 2.0))
        self.shift = torch.nn.Parameter(torch.zeros(1, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.shift + self.square.sum()


def test_step_binds_a_parameter_shaped_with_size_one_dimensions_and_reshapes_its_gradient() -> None:
    backward = Backward().to_json()
    judged = training_model(_Scaled, backward)()
    runner = training_model(_Broadcast, backward)()
    runner.bind(judged.wanted())
    assert runner.parameter_names == ["scale", "shift"]
    x, g = torch.randn(3, 4), torch.randn(3, 4)
    want, got = judged(x, (g,)), runner(x, (g,))
    assert [tuple(t.shape) for t in got[2]] == [(4,), (4,)]
    assert all(torch.equal(a, b) for a, b in zip(want[2], got[2], strict=True))


def test_gradient_passed_through_is_copied_off_the_upstream_gradient() -> None:
    """PyTorch hands an add's upstream gradient on unchanged; the step returns a copy, so the judge's
    aliasing check stays a check of the forward."""
    step = TrainingStep(_Scaled(), Backward(None, ("bias",)).to_json())
    g = torch.randn(4)
    _, _, (bias_grad,) = step(torch.randn(4), (g,))
    assert (
        torch.equal(bias_grad, g) and bias_grad.untyped_storage().data_ptr() != g.untyped_storage().data_ptr()
    )


class _Asks(torch.nn.Module):
    """Counts calls of its named_parameters(); returns its output in a tuple subclass."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((4,), 2.0))
        self.asked = 0

    def named_parameters(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.asked += 1
        return super().named_parameters(*args, **kwargs)

    def forward(self, x: torch.Tensor) -> Any:
        return _Odd((x * self.weight,))


class _Odd(tuple):  # type: ignore[type-arg]
    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the step walked the output by the candidate's __iter__")


def test_step_asks_the_model_for_its_parameters_when_built_and_bound_not_per_call() -> None:
    """A call of named_parameters() in every step, and none in the forward timed alone, told them apart;
    the output's tuple subclass is read by tuple's own iterator, a plain tuple after."""
    step = TrainingStep(_Asks(), Backward().to_json())
    step.bind(step.wanted())
    asked = step.model.asked
    x, g = torch.randn(3, 4), torch.randn(3, 4)
    output, _, (weight_grad,) = step(x, (g,))
    step.forward_pass(x, (g,))
    step.to(torch.float64)  # a conversion: the parameters held again
    _, _, (converted,) = step(x.double(), (g.double(),))
    assert step.model.asked == asked + 1 and type(output) is tuple
    assert torch.equal(weight_grad, (g * x).sum(0)) and converted.dtype == torch.float64


# ------------------------------------------------------------------------------------ the harness


@pytest.fixture(scope="module", autouse=True)
def _interpreter() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        BACKEND.prepare_process("cpu")
        yield


def _template(name: str) -> str:
    path = Path(__file__).resolve().parent.parent / "kernelevolve/variation/templates/triton" / f"{name}.py"
    return path.read_text()


def test_shipped_rmsnorm_template_passes_the_training_spec_with_both_timings(cpu_platform: Platform) -> None:
    spec = _spec("train_rmsnorm")
    settings = EvalSettings(
        correctness_trials=2, timing_trials=2, warmup_trials=1, measure_compile_baseline=False
    )
    request = EvalRequest(Candidate(_template("rmsnorm_train"), "triton", "test"), spec, "cpu", settings)
    report = harness.evaluate(request, cpu_platform)
    assert report.status is Status.OK, report.feedback
    assert set(report.latency) == set(report.forward_latency) == {s.name for s in spec.shapes}
    assert all(report.forward_latency[k].median_ms > 0 for k in report.latency)


def test_forward_only_template_is_rejected_on_the_gradient_it_does_not_compute(
    cpu_platform: Platform,
) -> None:
    spec = _spec("train_rmsnorm")
    settings = EvalSettings(
        correctness_trials=1, timing_trials=2, warmup_trials=1, measure_compile_baseline=False
    )
    request = EvalRequest(Candidate(_template("rmsnorm_looped"), "triton", "test"), spec, "cpu", settings)
    report = harness.evaluate(request, cpu_platform)
    assert report.status is Status.INCORRECT and report.error_name == "mismatch"
    assert "the gradient of input 0" in report.feedback and "torch.autograd.Function" in report.feedback


def test_backward_contract_text_for_prompts() -> None:
    from kernelevolve.llm.backward_contract import backward_contract

    assert backward_contract(dataclasses.replace(_spec("train_rope"), backward=None), True) == ""
    text = backward_contract(_spec("train_rope"), True)
    assert "inputs 0, 1" in text and "no parameter" in text and "torch.autograd.Function" in text
    assert "Strict mode covers the backward" in text
    assert "every parameter" in backward_contract(_spec("train_layernorm"), False)
    assert "Strict mode" not in backward_contract(_spec("train_layernorm"), False)


def test_a_backward_naming_what_the_reference_lacks_is_a_spec_error() -> None:
    from kernelevolve.specs.loading import validate_reference

    spec = _spec("train_rmsnorm")
    validate_reference(spec)
    for backward, text in (
        (Backward((1,), None), "backward.inputs"),
        (Backward(None, ("bias",)), "backward.parameters"),
    ):
        with pytest.raises(SpecError, match=text):
            validate_reference(dataclasses.replace(spec, backward=backward))


def test_baselines_time_forward_and_backward_eager_and_compiled(
    cpu_platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.compile's baseline of a training spec is the compiled model's forward and AOTAutograd's
    compiled backward, checked against the reference's gradients like eager; both pay the forward probe
    between the passes, as a candidate's step does."""
    from kernelevolve.eval.baseline_timing import measure_baselines
    from kernelevolve.eval.forward_probe import ForwardProbe

    takes: list[int] = []
    real_take = ForwardProbe.take
    monkeypatch.setattr(
        ForwardProbe, "take", lambda self, outputs: (takes.append(1), real_take(self, outputs))
    )
    spec = _spec("train_swiglu")
    settings = EvalSettings(timing_trials=3, warmup_trials=1, measure_compile_baseline=True)
    (baseline,) = measure_baselines(spec, cpu_platform, settings).values()
    assert baseline.compiled is not None, baseline.compile_error
    assert baseline.eager_within_tolerance and baseline.compiled_within_tolerance
    assert baseline.eager.median_ms > 0 and baseline.compiled.median_ms > 0
    assert len(takes) >= 2 * settings.timing_trials  # eager's timed calls and torch.compile's
