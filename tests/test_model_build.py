"""Where models are initialised: on the device when every model of a comparison can be, else on the host."""

from __future__ import annotations

import time
import types

import pytest
import torch

from kernelevolve.eval import stages
from kernelevolve.specs import reference
from kernelevolve.specs.reference import ReferenceSpecError, build_model, build_model_on, load_reference
from kernelevolve.types import ShapeCase
from tests.gpu import needs_cuda

REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.made_on = torch.empty(0).device.type

    def forward(self, x):
        return self.linear(x)

features = 8

def get_inputs():
    return [torch.rand(4, features)]

def get_init_inputs():
    return [features]
"""


class HostOnlyModel(torch.nn.Module):
    """An __init__ that works on the host only (say, one that calls .numpy() on a tensor it makes)."""

    def __init__(self, features: int) -> None:
        super().__init__()
        if torch.empty(0).device.type != "cpu":
            raise RuntimeError("this constructor reads its tensors on the host")
        self.linear = torch.nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def _module() -> types.ModuleType:
    module = load_reference(REFERENCE)
    reference.apply_shape(module, ShapeCase("default", {}))
    return module


def test_on_device_runs_the_constructor_under_the_device() -> None:
    module = _module()
    on_meta = build_model_on(module.Model, module, 0, "meta", torch.float32, on_device=True)
    on_host = build_model_on(module.Model, module, 0, "meta", torch.float32, on_device=False)
    assert (on_meta.made_on, on_host.made_on) == ("meta", "cpu")
    assert on_meta.linear.weight.device.type == on_host.linear.weight.device.type == "meta"


def test_one_route_gives_both_models_the_same_parameters() -> None:
    module = _module()
    first = build_model(module.Model, module, 3, "cpu", torch.float32)
    second = build_model(module.Model, module, 3, "cpu", torch.float32)
    other_seed = build_model(module.Model, module, 4, "cpu", torch.float32)
    assert torch.equal(first.linear.weight, second.linear.weight)
    assert not torch.equal(first.linear.weight, other_seed.linear.weight)


def test_build_model_falls_back_to_the_host_when_the_device_constructor_fails() -> None:
    module = _module()
    model = build_model(HostOnlyModel, module, 0, "meta", torch.float32)
    assert model.linear.weight.device.type == "meta"
    with pytest.raises(RuntimeError, match="on the host"):
        build_model_on(HostOnlyModel, module, 0, "meta", torch.float32, on_device=True)


# ModelNew sources for the judge/runner tests: built in a runner, so their "device build" failure is a
# constructor run under a device context (torch.device(...)), which the runner enters for on-device builds.
_CANDIDATE = """
import torch
from torch.overrides import _get_current_function_mode_stack


class ModelNew(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        PROLOGUE
        self.linear = torch.nn.Linear(features, features)

    def forward(self, x):
        return self.linear(x)
"""
_HOST_ONLY = (
    'if any(type(m).__name__ == "DeviceContext" for m in _get_current_function_mode_stack()): '
    'raise RuntimeError("this constructor reads its tensors on the host")'
)


def _pair(
    module: types.ModuleType, prologue: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[bool], object]:
    """`stages._build_pair` with a real runner, on-device builds pretended on the CPU (a device context
    entered for them); returns the judge's routes for the reference and the pair (or the Stop raised)."""
    from kernelevolve.eval import runner_client
    from kernelevolve.eval.shared_tensors import SharedArena

    routes: list[bool] = []
    real = reference.construct

    def recorded(factory, init, device, dtype, *, on_device, mode="as_built"):  # type: ignore[no-untyped-def]
        routes.append(on_device)
        return real(factory, init, device, dtype, on_device=on_device, mode=mode)

    monkeypatch.setattr(reference, "initialises_on_device", lambda device: True)
    monkeypatch.setattr(reference, "construct", recorded)
    runners = runner_client.pool()
    runner, arena = runners.take(), SharedArena("cpu")
    try:
        source = _CANDIDATE.replace("PROLOGUE", prologue)
        load = {
            "op": "load",
            "device": "cpu",
            "dtype": "float32",
            "backend": "triton",
            "candidate_id": "t",
            "source": source,
        }
        assert runner.request(load, 60)["ok"] is True
        deadline = time.monotonic() + 60
        try:
            ref_model, remote = stages._build_pair(
                module,
                ShapeCase("default", {}),
                0,
                0,
                "cpu",
                torch.float32,
                runner,
                arena,
                deadline,
                "",
                False,
            )
        except Exception as exc:  # noqa: BLE001 - the test inspects what the judge raised
            return routes, exc
        x = torch.rand(4, 8)
        expected = ref_model(x)
        got = remote.call([arena.copy_of(x)], expected, 0)
        assert torch.equal(got, expected)  # same route, same generator states: the parameters agree
        return routes, ref_model
    finally:
        runners.finish(runner)
        arena.close()


def test_the_judge_builds_both_models_on_the_device_when_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    routes, built = _pair(_module(), "pass", monkeypatch)
    assert routes == [True] and isinstance(built, torch.nn.Module)


def test_the_judge_rebuilds_both_on_the_host_when_the_candidate_cannot_be_built_on_the_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    routes, built = _pair(_module(), _HOST_ONLY, monkeypatch)
    assert routes == [True, False] and isinstance(built, torch.nn.Module)


def test_a_candidate_that_builds_nowhere_is_reported_with_its_host_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its host error is reported; the reference is built on the host once more to try it there."""
    from kernelevolve.eval.remote import RunnerFailure

    routes, raised = _pair(_module(), 'raise ValueError("no weights for you")', monkeypatch)
    assert isinstance(raised, RunnerFailure) and "no weights for you" in raised.fields["feedback"]
    assert routes == [True, False]


def test_a_reference_that_builds_nowhere_is_a_spec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_reference(
        REFERENCE.replace("super().__init__()", "super().__init__(); raise ValueError('no')")
    )
    routes, raised = _pair(module, "pass", monkeypatch)
    assert isinstance(raised, ReferenceSpecError) and "cannot be built: ValueError: no" in str(raised)
    assert routes == [True, False]


@pytest.mark.gpu
@needs_cuda
def test_a_large_linear_layer_is_built_on_the_gpu_in_well_under_a_second() -> None:
    module = load_reference(REFERENCE.replace("features = 8", "features = 16384"))
    reference.apply_shape(module, ShapeCase("default", {}))
    build_model(module.Model, module, 0, "cuda", torch.float32)  # CUDA context and kernels loaded
    torch.cuda.synchronize()
    started = time.perf_counter()
    first = build_model(module.Model, module, 0, "cuda", torch.float32)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    second = build_model(module.Model, module, 0, "cuda", torch.float32)
    assert first.made_on == "cuda" and torch.equal(first.linear.weight, second.linear.weight)
    assert seconds < 0.5, f"a 16384x16384 Linear took {seconds:.2f} s to build"
