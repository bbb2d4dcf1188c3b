"""A training step's forward outputs must be final when the forward returns: sampled then, compared after.

The training step (`specs/training.TrainingStep.step`) runs the forward, then the backward, and returns the
forward's outputs once both are done, so every check saw them after the backward had run. A forward that
returned an empty tensor and a backward that filled it (one fused pass over the inputs for the output and
the input gradient, one read saved) was right by then, on checked and timed calls alike; in a model the
next layer reads the output long before any backward (`tests/adversarial/hacks/
backward_computes_forward_output.py`). The forward timed alone (`forward_pass`) was checked, but the
candidate told it apart (the step asks ModelNew for its parameters first) and did the work there.

In the runner, the step hands each forward output to a `ForwardProbe` as the forward returns, which gathers
`SAMPLES` elements at positions drawn in secret (the operating system's randomness, per evaluation and
output shape) before the backward runs; after the call, outside any timed window, the runner gathers the
same positions again and compares the bytes. An element that changed was not final when the forward
returned (`FORWARD_DEFERRED`). The cost inside a call: one small gather per forward output tensor. A
candidate that finished all but a few elements early escapes with the chance that none was drawn, having
saved only those few.

The probe also notes the launches made by the time the forward returned (`launches_at`): the forward's own
launches in a checked call are the floor of the forward timed alone (`runner.op_time`), where PyTorch
could otherwise answer a forward a candidate tells apart
(`tests/adversarial/hacks/forward_alone_by_pytorch_after_no_backward.py`).
"""

from __future__ import annotations

import random
from typing import Any

FORWARD_DEFERRED = "forward_output_deferred"
SAMPLES = 256


class ForwardProbe:
    """`take(outputs)` as the forward returns (inside the call), `changed()` once the call is over."""

    def __init__(self) -> None:
        self._draws = random.SystemRandom()
        self._positions: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._taken: list[tuple[int, Any, tuple[Any, ...], Any]] = []
        self.launches_at = 0  # the launch counter as the last forward returned

    def take(self, outputs: list[Any]) -> None:
        """Sample each exact tensor in `outputs` (the forward's, in order) at this shape's secret positions."""
        import torch

        from kernelevolve.eval.runner_trace import _LAUNCHES

        self.launches_at = _LAUNCHES[0]
        self._taken = []
        with torch.no_grad(), torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
            for index, leaf in enumerate(outputs):
                if type(leaf) is torch.Tensor and leaf.numel():  # others fail the output checks
                    where = self._where(leaf)
                    self._taken.append((index, leaf, where, _gather(leaf, where)))

    def changed(self) -> str | None:
        """What changed in the forward's outputs since `take`, or None; forgets the samples."""
        import torch

        taken, self._taken = self._taken, []
        for device in {leaf.device for _, leaf, _, _ in taken if leaf.device.type == "cuda"}:
            torch.cuda.synchronize(device)  # every stream's writes landed: the second sample sees them all
        with torch.no_grad(), torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
            for index, leaf, where, before in taken:
                after = _gather(leaf, where)
                if not torch.equal(_bytes(after), _bytes(before)):
                    return (
                        f"forward output {index} changed after the forward returned (during the backward): "
                        "a forward's outputs must be final when it returns, as the next layer of a model reads "
                        "them before any backward runs; compute them in the forward"
                    )
        return None

    def _where(self, leaf: Any) -> tuple[Any, ...]:
        """The positions sampled in tensors of `leaf`'s shape: one index tensor per dimension."""
        import torch

        key = (tuple(leaf.shape), leaf.device)
        if key not in self._positions:
            count = min(SAMPLES, leaf.numel())
            flat = torch.tensor([self._draws.randrange(leaf.numel()) for _ in range(count)])
            self._positions[key] = tuple(
                t.to(leaf.device) for t in torch.unravel_index(flat, tuple(leaf.shape))
            )
        return self._positions[key]


def _gather(leaf: Any, where: tuple[Any, ...]) -> Any:
    """The elements of `leaf` at `where` (a 0-d tensor: itself), as a new tensor."""
    return leaf.detach().reshape(1).clone() if leaf.dim() == 0 else leaf.detach()[where]


def _bytes(tensor: Any) -> Any:
    """A tensor's bytes: NaN equals NaN of the same bits, and -0.0 differs from 0.0, as written memory does."""
    import torch

    return tensor.contiguous().reshape(-1).view(torch.uint8)
