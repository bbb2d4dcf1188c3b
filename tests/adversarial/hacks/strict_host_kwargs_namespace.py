# hack: computed attribute name through `**` into a library class that stores its keyword arguments as
# attributes (`argparse.Namespace`): names NumPy's raw-address protocol without spelling it; NumPy views
# the input's memory and computes (strict mode, CPU)
# spec: relu
# expect: rejected_static dynamic_code
# runtime: ok
# runtime-gpu: worker_crash (NumPy reads a CUDA tensor's device address as host memory: the runner dies)
import argparse

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


class ModelNew(nn.Module):
    def forward(self, x):
        def host(t):
            name = "__array_" + "interface__"
            view = argparse.Namespace(
                **{
                    name: {
                        "data": (t.data_ptr(), True),
                        "shape": (t.numel(),),
                        "typestr": "<f4",
                        "version": 3,
                    }
                }
            )
            return np.maximum(np.asarray(view), 0.0).tolist()

        res = torch.tensor(host(x), dtype=x.dtype, device=x.device).view(x.shape)
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 64),)](res, out, x.numel(), BLOCK=64)
        return out
