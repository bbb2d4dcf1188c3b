# good: CuTe DSL elementwise add compiled once in __init__-free lazy style; checked statically only
# spec: none
# backend: cute
# run: static-only
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def relu_kernel(g_in: cute.Tensor, g_out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < cute.size(g_in):
        v = g_in[i]
        g_out[i] = v if v > cutlass.Float32(0.0) else cutlass.Float32(0.0)


@cute.jit
def launch_relu(m_in: cute.Tensor, m_out: cute.Tensor):
    threads = 128
    blocks = (cute.size(m_in) + threads - 1) // threads
    relu_kernel(m_in, m_out).launch(grid=(blocks, 1, 1), block=(threads, 1, 1))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {}

    def forward(self, x):
        out = torch.empty_like(x)
        a, b = from_dlpack(x), from_dlpack(out)
        key = (tuple(x.shape), x.dtype)
        if key not in self._compiled:
            self._compiled[key] = cute.compile(launch_relu, a, b)
        self._compiled[key](a, b)
        return out
