"""`eval/forward_probe.py`: a training step's forward outputs sampled as the forward returns, compared after."""

from __future__ import annotations

import torch

from kernelevolve.eval.forward_probe import SAMPLES, ForwardProbe


def test_outputs_left_alone_pass_nan_included() -> None:
    probe = ForwardProbe()
    out = torch.randn(4, 300)
    out[0, :5] = float("nan")
    scalar = torch.tensor(2.5)
    probe.take([out, scalar, "not a tensor"])
    assert probe.changed() is None


def test_an_output_filled_after_the_forward_is_named() -> None:
    probe = ForwardProbe()
    first, second = torch.zeros(3, 5), torch.full((64, 64), float("nan"))
    probe.take([first, second])
    second.fill_(1.0)  # what a backward finishing the forward's output does
    problem = probe.changed()
    assert problem is not None and "forward output 1" in problem
    assert probe.changed() is None  # the samples are forgotten once compared


def test_a_scalar_output_written_later_is_seen() -> None:
    probe = ForwardProbe()
    loss = torch.tensor(0.0)
    probe.take([loss])
    loss.fill_(3.0)
    assert probe.changed() is not None


def test_positions_are_a_sample_kept_per_shape_and_reach_strided_outputs() -> None:
    probe = ForwardProbe()
    out = torch.randn(200, 300).t()  # not contiguous: gathered in place, no copy of the whole
    probe.take([out])
    (where,) = probe._positions.values()
    assert len(where) == 2 and all(len(t) == SAMPLES for t in where)
    out.zero_()
    assert probe.changed() is not None
    probe.take([torch.randn(200, 300).t()])
    assert len(probe._positions) == 1


def test_the_launch_count_is_noted_as_the_forward_returns() -> None:
    """The forward's own launches in a checked call: the floor of the forward timed alone."""
    from kernelevolve.eval.runner_trace import _LAUNCHES

    probe = ForwardProbe()
    before = _LAUNCHES[0]
    _LAUNCHES[0] += 3
    try:
        probe.take([torch.zeros(2)])
        assert probe.launches_at - before == 3
    finally:
        _LAUNCHES[0] = before
