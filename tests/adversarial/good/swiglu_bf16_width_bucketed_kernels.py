# good: SwiGLU in bf16 with shape-bucketed dispatch: a table of (widest hidden size, launcher) pairs picks
# a narrow kernel (several whole rows per program, one power-of-two tile) for small hidden sizes and a
# tiled (token, column block) kernel above; each launcher is a plain function, silu in fp32, one rounding
# spec: shipped:swiglu
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_narrow_kernel(x_ptr, out_ptr, n_rows, hidden, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < hidden)
    src = x_ptr + rows[:, None] * (2 * hidden) + cols[None, :]
    a = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(src + hidden, mask=mask, other=0.0).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(out_ptr + rows[:, None] * hidden + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_tiled_kernel(x_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    a = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    y = a * tl.sigmoid(a) * b
    tl.store(out_ptr + row * hidden + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def _launch_narrow(x2: torch.Tensor, out: torch.Tensor, hidden: int) -> None:
    rows = 4
    swiglu_narrow_kernel[(triton.cdiv(x2.shape[0], rows),)](
        x2, out, x2.shape[0], hidden, ROWS=rows, BLOCK=triton.next_power_of_2(hidden)
    )


def _launch_tiled(x2: torch.Tensor, out: torch.Tensor, hidden: int) -> None:
    block = 64
    swiglu_tiled_kernel[(x2.shape[0], triton.cdiv(hidden, block))](x2, out, hidden, BLOCK=block)


BUCKETS = ((64, _launch_narrow), (1 << 62, _launch_tiled))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1] // 2
        x2 = x.reshape(-1, 2 * hidden).contiguous()
        out = torch.empty((x2.shape[0], hidden), dtype=x.dtype, device=x.device)
        launch = next(fn for widest, fn in BUCKETS if hidden <= widest)
        launch(x2, out, hidden)
        return out.view(*x.shape[:-1], hidden)
