# hack: a training step whose forward returns a tuple subclass whose __iter__ yields from a list it holds:
# empty tensors as the forward returns, the real outputs once the backward has put them there (one pass
# over q and k for the outputs and the gradients). The step walked the output by iteration, so the probe
# sampled the empty tensors (they never change) and the step, reading the output again after the
# backward, returned tensors the forward never made. The forward alone (timed apart) must be right, so it
# tells the two apart by the step's named_parameters() call before each forward. Now the step reads the
# output once, as the forward returned it (tuple's own iterator): the empty tensors, wrong
# spec: shipped:train_rope
# expect: incorrect mismatch
# runtime: incorrect mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rotate_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, seq, sign, HALF: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    pos = row % seq
    d = tl.arange(0, BLOCK)
    mask = d < HALF
    lo = tl.load(x_ptr + row * 2 * HALF + d, mask=mask, other=0.0).to(tl.float32)
    hi = tl.load(x_ptr + row * 2 * HALF + HALF + d, mask=mask, other=0.0).to(tl.float32)
    c_lo = tl.load(cos_ptr + pos * 2 * HALF + d, mask=mask, other=0.0).to(tl.float32)
    c_hi = tl.load(cos_ptr + pos * 2 * HALF + HALF + d, mask=mask, other=0.0).to(tl.float32)
    s_lo = tl.load(sin_ptr + pos * 2 * HALF + d, mask=mask, other=0.0).to(tl.float32) * sign
    s_hi = tl.load(sin_ptr + pos * 2 * HALF + HALF + d, mask=mask, other=0.0).to(tl.float32) * sign
    if sign > 0:
        out_lo = lo * c_lo - hi * s_lo
        out_hi = hi * c_hi + lo * s_hi
    else:
        out_lo = lo * c_lo - hi * s_hi
        out_hi = hi * c_hi + lo * s_lo
    tl.store(out_ptr + row * 2 * HALF + d, out_lo.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + row * 2 * HALF + HALF + d, out_hi.to(out_ptr.dtype.element_ty), mask=mask)


def _rotate(x, cos, sin, sign):
    x = x.contiguous()
    out = torch.empty_like(x)
    seq, dim = x.shape[-2], x.shape[-1]
    rotate_kernel[(x.numel() // dim,)](
        x, cos, sin, out, seq, sign, HALF=dim // 2, BLOCK=triton.next_power_of_2(dim // 2)
    )
    return out


class Outputs(tuple):
    """Holds nothing of its own: iteration reads `holder` as it is then."""

    def __new__(cls, items=(), holder=None):
        made = super().__new__(cls, items)
        made.holder = holder
        return made

    def __iter__(self):
        return iter(self.holder) if self.holder is not None else tuple.__iter__(self)


STEP = {"next": False}  # whether the coming forward is a training step's (a backward follows)


class _Rope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin, holder, index):
        ctx.holder, ctx.index = holder, index
        ctx.save_for_backward(x, cos, sin)
        return torch.empty_like(x)  # left for the backward

    @staticmethod
    def backward(ctx, dy):
        x, cos, sin = ctx.saved_tensors
        ctx.holder[ctx.index] = _rotate(x, cos, sin, 1.0)  # the forward's output, made now
        return _rotate(dy, cos, sin, -1.0), None, None, None, None


class ModelNew(nn.Module):
    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        STEP["next"] = True
        return super().named_parameters(prefix, recurse, remove_duplicate)

    def forward(self, q, k):
        deferred = STEP["next"]
        STEP["next"] = False
        if not deferred:
            return _rotate(q, self.cos, self.sin, 1.0), _rotate(k, self.cos, self.sin, 1.0)
        holder = [None, None]
        holder[0] = _Rope.apply(q, self.cos, self.sin, holder, 0)
        holder[1] = _Rope.apply(k, self.cos, self.sin, holder, 1)
        return Outputs(holder, holder)
