"""Our LSTM and GRU layers, as source text for recurrent seeds (recurrent_seed.py).

Dynamo does not trace PyTorch's RNN modules, so KernelBench's LSTM and GRU problems (L3/35-L3/42) get no
compiler seed. `_KeLSTM` and `_KeGRU` take nn.LSTM's and nn.GRU's place in a copy of the reference, with
the same constructor, parameters and initialisation; `RNN_STEPS` (a tunable) picks how they run their
steps: a GEMM and a cell kernel a step, one persistent kernel a layer and direction, or programs over the
hidden units meeting at a grid barrier, the own-kernels twin's default (kernels/recurrent.py, the code
seeds paste in, says how each does).

The GEMMs go through `_ke_rnn_matmul(a, b, out=, bias=)`: cuBLAS in `LIBRARY_RNN_MATMUL` (permissive), our
Triton GEMM (own_gemm.py) in `OWN_RNN_MATMUL`, whose seeds also take the reference's nn.Linear layers as
`_KeLinear` (`OWN_LINEAR_SOURCE`), so a model of recurrent and linear layers does all its work in our
kernels (strict).
"""

from __future__ import annotations

from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES
from kernelevolve.variation.kernels import kernel_source

RECURRENT_CLASSES = {"LSTM": "_KeLSTM", "GRU": "_KeGRU"}
STEPS_PER_STEP = 'RNN_STEPS = "per_step"'
STEPS_PERSISTENT = 'RNN_STEPS = "persistent"'
STEPS_GRID = 'RNN_STEPS = "grid"'
LINEAR_CLASS = "_KeLinear"

# the recurrent layers' GEMMs: cuBLAS (permissive seeds), or our GEMM, its tunables first (strict seeds);
# each a blank line first, as seeds join pieces by newlines
LIBRARY_RNN_MATMUL = "\n" + kernel_source("recurrent_matmul_library")
OWN_RNN_MATMUL = "\n".join([*GEMM_TUNABLES, GEMM_SOURCE]) + "\n\n" + kernel_source("recurrent_matmul_own")
# nn.Linear through our GEMM, after OWN_RNN_MATMUL
OWN_LINEAR_SOURCE = "\n\n" + kernel_source("linear")
# the layers, their kernels and tunables
RECURRENT_SOURCE = "\n" + kernel_source("recurrent")
