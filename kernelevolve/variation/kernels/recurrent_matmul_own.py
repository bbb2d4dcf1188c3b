"""Our Triton GEMM for the recurrent layers' GEMMs, in the recurrent and elementwise seeds that run only our
kernels (recurrent_source.py): pasted after gemm.py's code. `# fmt: off` keeps the layout candidates have.
"""
# fmt: off

from kernelevolve.variation.kernels.gemm import _matmul


def _ke_rnn_matmul(a, b, out=None, bias=None):
    # our Triton GEMM (bias: a vector, or a matrix such as a step's slice of the input projection)
    return _matmul(a, b, out=out, bias=bias)
