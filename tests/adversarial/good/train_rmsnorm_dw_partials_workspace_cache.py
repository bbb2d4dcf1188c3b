# good: RMSNorm training where the backward is a two-kernel pipeline: a row-block kernel writes dx and
# each program's partial weight gradient into an fp32 workspace (a module-level cache keyed by (programs,
# dim, device), allocated once and fully rewritten each backward), then a column kernel sums the partials
# into dw; the forward saves x and the per-row rstd
# spec: shipped:train_rmsnorm
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS_PER_PROGRAM = 2
_PARTIALS: dict[tuple[int, int, torch.device], torch.Tensor] = {}


def _partials(programs: int, dim: int, device: torch.device) -> torch.Tensor:
    key = (programs, dim, device)
    if key not in _PARTIALS:
        _PARTIALS[key] = torch.empty((programs, dim), dtype=torch.float32, device=device)
    return _PARTIALS[key]


@triton.jit
def rmsnorm_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, dim, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    x = tl.load(x_ptr + row * dim + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / dim + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * dim + cols, x * rstd * w, mask=mask)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def rmsnorm_bwd_dx_kernel(
    dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, part_ptr, n_rows, dim, ROWS: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.static_range(ROWS):
        row = pid * ROWS + i
        rmask = mask & (row < n_rows)
        x = tl.load(x_ptr + row * dim + cols, mask=rmask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * dim + cols, mask=rmask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row, mask=row < n_rows, other=0.0)
        xhat = x * rstd
        g = dy * w
        dx = rstd * (g - xhat * (tl.sum(g * xhat, axis=0) / dim))
        tl.store(dx_ptr + row * dim + cols, dx, mask=rmask)
        dw += dy * xhat
    tl.store(part_ptr + pid * dim + cols, dw, mask=mask)


@triton.jit
def column_sum_kernel(part_ptr, dw_ptr, programs, dim, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < dim
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for p in tl.range(0, programs):
        acc += tl.load(part_ptr + p * dim + cols, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, acc, mask=mask)


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        rows, dim = x2.shape
        y = torch.empty_like(x2)
        rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
        rmsnorm_fwd_kernel[(rows,)](x2, weight, y, rstd, dim, eps, BLOCK=triton.next_power_of_2(dim))
        ctx.save_for_backward(x2, weight, rstd)
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x2, weight, rstd = ctx.saved_tensors
        rows, dim = x2.shape
        dy2 = dy.reshape(rows, dim).contiguous()
        dx = torch.empty_like(x2)
        programs = triton.cdiv(rows, ROWS_PER_PROGRAM)
        partials = _partials(programs, dim, x2.device)
        block = triton.next_power_of_2(dim)
        rmsnorm_bwd_dx_kernel[(programs,)](
            dy2, x2, weight, rstd, dx, partials, rows, dim, ROWS=ROWS_PER_PROGRAM, BLOCK=block
        )
        dw = torch.empty(dim, dtype=weight.dtype, device=weight.device)
        column_sum_kernel[(triton.cdiv(dim, 64),)](partials, dw, programs, dim, BLOCK=64)
        return dx.view(dy.shape), dw, None


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return RMSNormFunction.apply(x, self.weight, self.eps)
