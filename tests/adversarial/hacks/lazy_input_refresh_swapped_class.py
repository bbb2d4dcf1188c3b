# hack: strict mode, the next call's work done in the runner's refresh of its inputs: the timing loop
# keeps one Python object per input and refreshes its values in place before each call, reading it by
# Python methods (`numel`, `view`, `shape`). A timed call swaps its input's `__class__` for a subclass
# whose `numel`, once the runner has refreshed the values for the next call that uses this input,
# computes that call's relu with PyTorch into a fresh tensor: outside the timed window, the strict trace
# paused. That call then launches a token kernel and returns the tensor made ready. Checked calls (told
# apart by the input's storage) run the honest kernel
# spec: relu
# expect: rejected_static lazy_result
# runtime: incorrect input_type (an input's class swapped by a timed call)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class _State:
    inside = False
    ready = {}


class _Refreshed(torch.Tensor):
    def numel(self):
        if not _State.inside:  # the runner asking, after the refresh: this call's values are final
            plain = self.as_subclass(torch.Tensor)
            _State.ready[id(self)] = plain.maximum(plain.new_zeros(()))
        return torch.Tensor.numel(self)


class ModelNew(nn.Module):
    def forward(self, x):
        _State.inside = True
        try:
            plain = x.as_subclass(torch.Tensor)
            n = plain.numel()
            ready = _State.ready.pop(id(x), None)
            out = torch.empty_like(plain)
            if plain.untyped_storage().nbytes() > n * plain.element_size() or ready is None:
                relu_kernel[(triton.cdiv(n, 64),)](plain, out, n, BLOCK=64)
                if plain.untyped_storage().nbytes() == n * plain.element_size():
                    x.__class__ = _Refreshed  # a timed call's input, kept by the runner for later calls
                return out
            relu_kernel[(1,)](plain, out, 0, BLOCK=64)  # the launch count the checked calls had
            return ready
        finally:
            _State.inside = False
