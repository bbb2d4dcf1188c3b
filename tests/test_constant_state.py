"""The judge perturbs the reference's constant-initialised tensors (a norm's weight of ones, a running mean
of zeros) and the runner gives the candidate's counterparts the same values (`specs.reference`)."""

from __future__ import annotations

import torch
import torch.nn as nn

from kernelevolve.specs.reference import apply_constant_state, perturb_constant_state


class _PlainStats(nn.Module):
    """BatchNorm written from scratch: parameters, and the running statistics in plain attributes."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.running_mean = torch.zeros(features)
        self.running_var = torch.ones(features)


def test_running_statistics_in_plain_attributes_get_the_references_values() -> None:
    reference = nn.Sequential(nn.BatchNorm1d(6))
    candidate = _PlainStats(6)
    changed = perturb_constant_state(reference, candidate, seed=3)
    assert set(changed) == {"weight", "bias", "running_mean", "running_var"}
    bn = reference[0]
    assert torch.equal(candidate.running_mean, bn.running_mean)
    assert torch.equal(candidate.running_var, bn.running_var)
    assert torch.equal(candidate.weight.detach(), bn.weight.detach())


def test_parameters_and_buffers_are_matched_before_plain_attributes() -> None:
    """A plain constant of the same shape (a helper of ones) is taken only where nothing registered is left."""

    class WithHelper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ones = torch.ones(6)
            self.bn = nn.BatchNorm1d(6)

    reference = nn.Sequential(nn.BatchNorm1d(6))
    candidate = WithHelper()
    perturb_constant_state(reference, candidate, seed=3)
    assert torch.equal(candidate.ones, torch.ones(6))
    assert torch.equal(candidate.bn.running_var, reference[0].running_var)


def test_inference_tensors_are_left_alone() -> None:
    with torch.inference_mode():
        held = torch.zeros(6)
    candidate = nn.Module()
    candidate.running_mean = held
    reference = nn.Module()
    reference.register_buffer("running_mean", torch.zeros(6))
    from kernelevolve.specs.reference import perturbed_constant_state

    assert apply_constant_state(candidate, perturbed_constant_state(reference, 0)) == []
    assert torch.equal(held, torch.zeros(6))


def test_a_weight_kept_with_size_one_dimensions_gets_the_values_in_its_shape() -> None:
    """A (1, C, 1, 1) weight, shaped to broadcast, holds the reference's (C,) weight's elements in order;
    one of another layout of the same size does not."""

    class Broadcast(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.square = nn.Parameter(torch.ones(2, 3))  # six ones, but not the weight's layout
            self.gamma = nn.Parameter(torch.ones(1, 6, 1, 1))

    reference = nn.GroupNorm(2, 6)
    candidate = Broadcast()
    changed = perturb_constant_state(reference, candidate, seed=5)
    assert changed == ["gamma"]
    assert torch.equal(candidate.gamma.detach().view(6), reference.weight.detach())
    assert torch.equal(candidate.square.detach(), torch.ones(2, 3))
