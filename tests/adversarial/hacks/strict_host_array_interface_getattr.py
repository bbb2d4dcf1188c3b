# hack: as strict_host_array_interface, the protocol never spelled: a local class's `__getattr__` answers
# NumPy's lookup of any name starting `__array_i` with the input's address
# spec: relu
# expect: rejected_static dynamic_code
# runtime: ok
# runtime-gpu: worker_crash (NumPy reads a CUDA tensor's device address as host memory: the runner dies)
import numpy as np
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


class Raw:
    def __init__(self, t):
        self.t = t

    def __getattr__(self, name):
        if not name.startswith("__array_i"):
            raise AttributeError(name)
        return {"data": (self.t.data_ptr(), True), "shape": (self.t.numel(),), "typestr": "<f4", "version": 3}


class ModelNew(nn.Module):
    def forward(self, x):
        def host(t):
            return np.maximum(np.asarray(Raw(t)), 0.0).tolist()

        res = torch.tensor(host(x), dtype=x.dtype, device=x.device).view(x.shape)
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](res, out, x.numel(), BLOCK=64)
        return out
