# good: Llama RMSNorm in bf16: the row upcast to fp32 for the statistics, rounded to bf16 before the
# weight as Hugging Face does, any leading shape flattened with reshape, the eps from the constructor, the
# output dtype promoted from the weight's and the input's
# spec: shipped:rmsnorm_llama
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / n_cols
    h = (x * tl.rsqrt(var + eps)).to(y_ptr.dtype.element_ty)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # PyTorch multiplies bf16 by bf16 in fp32 and rounds once: the same here
    tl.store(y_ptr + row * stride_y + offs, (w * h.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        # the reference multiplies the fp32 weight by a bf16 tensor: the result is fp32
        out_dtype = torch.promote_types(self.weight.dtype, x.dtype)
        y = torch.empty(x2.shape, dtype=out_dtype, device=x.device)
        block = triton.next_power_of_2(shape[-1])
        rmsnorm_kernel[(x2.shape[0],)](
            x2, self.weight, y, x2.stride(0), y.stride(0), shape[-1], self.eps, BLOCK=block
        )
        return y.view(shape)
