"""nn.Linear with its product in our GEMM, for the seeds that take a reference's Linear layers into our
kernels (recurrent_source.py): pasted after recurrent_matmul_own.py's code.
`# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import torch.nn as nn

from kernelevolve.variation.kernels.recurrent_matmul_own import _ke_rnn_matmul


class _KeLinear(nn.Linear):
    # nn.Linear's parameters and initialisation; the product in our GEMM
    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        out = _ke_rnn_matmul(flat, self.weight.t(), bias=self.bias)
        return out.reshape(*x.shape[:-1], out.shape[-1])
