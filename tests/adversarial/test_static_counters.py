"""Rule for blue-team round 11 (strict mode): a module's own counter stepped by an int literal
(`self.num_batches_tracked.add_(1)` or `+= 1`, nn.BatchNorm's training-mode step) is no compute. Its
neighbours (a float step, a tensor step, a step of the input, a bool) stay refused; the runner's op trace
lets the step through only for a 0-d integer tensor (`strict_ops._counter_step`)."""

from __future__ import annotations

import pytest

from tests.adversarial.test_static_checks import LAUNCH, codes, model

INIT = 'self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))'
OUT = f"out = torch.empty_like(x)\n{LAUNCH}\n"


@pytest.mark.parametrize(
    "line",
    [
        "self.num_batches_tracked.add_(1)",
        "self.num_batches_tracked += 1",
        "self.num_batches_tracked.add_(2)",
    ],
)
def test_counter_step_is_not_compute(line: str) -> None:
    assert codes(model(f"{line}\n{OUT}return out", INIT)) == set()


@pytest.mark.parametrize(
    "line",
    [
        "self.num_batches_tracked.add_(1.0)",  # a float step
        "self.num_batches_tracked.add_(True)",  # a bool is no count
        "self.num_batches_tracked += 1.0",
        "self.num_batches_tracked -= 1",  # only the add form
        "self.num_batches_tracked.add_(1, alpha=2)",
        "self.num_batches_tracked.add_(self.num_batches_tracked)",  # a tensor step
        "self.num_batches_tracked.mul_(2)",
        "x.add_(1)",  # the input, not module state
        "x += 1",
    ],
)
def test_counter_neighbours_stay_compute(line: str) -> None:
    assert "torch_compute_op" in codes(model(f"{line}\n{OUT}return out", INIT))


def test_input_kept_on_self_and_stepped_stays_refused() -> None:
    # an input kept on the module is refused as state between calls, step or no step
    body = f"self.seen = x\nself.seen.add_(1)\n{OUT}return out"
    assert "state_between_calls" in codes(model(body, INIT))


def test_counter_step_is_not_compute_in_permissive_mode_either() -> None:
    assert codes(model(f"self.num_batches_tracked.add_(1)\n{OUT}return out", INIT), strict=False) == set()
