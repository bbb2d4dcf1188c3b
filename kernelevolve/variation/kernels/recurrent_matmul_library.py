"""cuBLAS for the recurrent layers' GEMMs, in permissive recurrent seeds (recurrent_source.py).
`# fmt: off` keeps the layout candidates have.
"""
# fmt: off

import torch


def _ke_rnn_matmul(a, b, out=None, bias=None):
    # cuBLAS: (bias +) a @ b, into out when given
    return torch.mm(a, b, out=out) if bias is None else torch.addmm(bias, a, b, out=out)
