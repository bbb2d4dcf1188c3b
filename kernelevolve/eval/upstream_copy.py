"""A training step's upstream gradients, handed to the candidate as copies the runner made for the call.

Liger-Kernel's RMSNorm (`in_place=True`, its default) and Megatron's fused softmax write the input gradient
over the upstream gradient `dy`, which autograd owns and nothing reads after that node. In the runner the
upstream gradients were the judge's input buffers, required unchanged (the judge rebuilds each timed call's
inputs from its pristine copies and the refresh pattern), so that honest backward failed `input_mutated`
(`tests/adversarial/good/train_rmsnorm_liger_in_place_dx_written_into_dy.py`). The runner now copies them
before each checked and timed call, outside the trace and the timed window (the L2 flush follows), so a
backward may write into its `dy` while the judge's buffers stay checked as before. The reference's autograd
never writes there and pays nothing. A gradient returned in the copy's memory is cloned by the step
(`training._own_memory`: the copy is held like an input), inside the call, as a pass-through one is.
"""

from __future__ import annotations

from typing import Any


def own_upstream(arguments: list[Any]) -> list[Any]:
    """`arguments` of a training step (its inputs, then the tuple of upstream gradients) with each upstream
    gradient tensor replaced by a copy of it (exact tensors only: another class fails the input checks)."""
    import torch

    *inputs, upstream = arguments
    with torch.no_grad(), torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
        copied = tuple(g.clone() if type(g) is torch.Tensor else g for g in upstream)
    return [*inputs, copied]
