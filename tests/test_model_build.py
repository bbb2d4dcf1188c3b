"""Where models are initialised: on the device when every model of a comparison can be, else on the host."""

from __future__ import annotations

import contextvars
import time
import types

import pytest
import torch

from kernelevolve.backends.triton import BACKEND
from kernelevolve.eval import harness, reference
from kernelevolve.eval.reference import ReferenceSpecError, build_model, build_model_on, load_reference
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


_PRETENDED_DEVICE_BUILD = contextvars.ContextVar("pretended_device_build", default=False)


class HostOnlyModel(torch.nn.Module):
    """An __init__ that works on the host only (say, one that calls .numpy() on a tensor it makes)."""

    def __init__(self, features: int) -> None:
        super().__init__()
        if torch.empty(0).device.type != "cpu" or _PRETENDED_DEVICE_BUILD.get():
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


def _routes_taken(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Pretend the CPU initialises on a device of its own (HostOnlyModel fails there); record the routes."""
    taken: list[tuple[str, bool]] = []
    real = reference.build_model_on

    def recorded(factory, module, seed, device, dtype, *, on_device):  # type: ignore[no-untyped-def]
        taken.append((factory.__name__, on_device))
        token = _PRETENDED_DEVICE_BUILD.set(on_device)
        try:
            return real(factory, module, seed, device, dtype, on_device=on_device)
        finally:
            _PRETENDED_DEVICE_BUILD.reset(token)

    monkeypatch.setattr(reference, "initialises_on_device", lambda device: True)
    monkeypatch.setattr(reference, "build_model_on", recorded)
    return taken


def test_the_harness_builds_both_models_on_the_device_when_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _routes_taken(monkeypatch)
    module = _module()
    ref_model, new_model = harness._build_models(
        module, module.Model, ShapeCase("default", {}), 0, "cpu", torch.float32, BACKEND, "candidate", ""
    )
    assert taken == [("Model", True), ("Model", True)]
    assert torch.equal(ref_model.linear.weight, new_model.linear.weight)


def test_the_harness_rebuilds_both_on_the_host_when_the_candidate_cannot_be_built_on_the_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken = _routes_taken(monkeypatch)
    module = _module()
    ref_model, new_model = harness._build_models(
        module, HostOnlyModel, ShapeCase("default", {}), 0, "cpu", torch.float32, BACKEND, "candidate", ""
    )
    assert taken == [("Model", True), ("HostOnlyModel", True), ("HostOnlyModel", False), ("Model", False)]
    # same route, same seed: the parameters agree, so the comparison is fair
    assert torch.equal(ref_model.linear.weight, new_model.linear.weight)


def test_a_candidate_that_builds_nowhere_costs_no_second_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its host error is reported; the reference is not built again on the host for nothing."""
    taken = _routes_taken(monkeypatch)
    module = _module()

    class Broken(torch.nn.Module):
        def __init__(self, features: int) -> None:
            super().__init__()
            raise ValueError("no weights for you")

    with pytest.raises(harness._Stop) as stop:
        harness._build_models(
            module, Broken, ShapeCase("default", {}), 0, "cpu", torch.float32, BACKEND, "candidate", ""
        )
    assert "no weights for you" in str(stop.value.fields)
    assert taken == [("Model", True), ("Broken", True), ("Broken", False)]


def test_a_reference_that_builds_nowhere_is_a_spec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _routes_taken(monkeypatch)
    module = load_reference(
        REFERENCE.replace("super().__init__()", "super().__init__(); raise ValueError('no')")
    )
    with pytest.raises(ReferenceSpecError, match="cannot be built: ValueError: no"):
        harness._build_models(
            module, HostOnlyModel, ShapeCase("default", {}), 0, "cpu", torch.float32, BACKEND, "candidate", ""
        )
    assert taken == [("Model", True), ("Model", False)]


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
