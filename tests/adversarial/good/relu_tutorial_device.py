# good: relu in the Triton tutorials' style: DEVICE from the active driver, a module-level wrapper function
# spec: relu
import torch
import torch.nn as nn
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def relu_kernel(x_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    output = tl.where(x > 0, x, 0)
    tl.store(output_ptr + offsets, output, mask=mask)


def relu(x: torch.Tensor):
    output = torch.empty_like(x)
    assert x.device == output.device
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    relu_kernel[grid](x, output, n_elements, BLOCK_SIZE=1024)
    return output


class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x)
