"""What the kernels in kernelevolve/variation/kernels render to, case by case, for the golden comparison
(test_kernel_modules.py): each kernel source as the seeds take it, and whole candidates of the seeds
that paste them in. The goldens under fixtures/kernel_goldens/ are these cases' text as the string
literals the kernel modules replaced gave it (captured before the move); a deliberate change to what
candidates get rewrites them (`python -m tests.kernel_goldens`), and their diff shows the change."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from kernelevolve.variation import elementwise_source, recurrent_source
from kernelevolve.variation.compiler import own_attention, own_conv, own_encoder, own_gemm, tf32_split
from kernelevolve.variation.compiler.program import parse
from kernelevolve.variation.compiler.render import INTERPRETER_REDUCTIONS_SOURCE, ShapeProgram, render
from kernelevolve.variation.elementwise_seed import elementwise_candidate
from kernelevolve.variation.kernels import kernel_source
from kernelevolve.variation.recurrent_seed import recurrent_candidate

GOLDENS = Path(__file__).parent / "fixtures" / "kernel_goldens"
_H200 = Path(__file__).parent / "fixtures" / "inductor_h200"

_LINEAR = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self, i, o):\n"
    "        super().__init__()\n        self.gemm = nn.Linear(i, o)\n\n    def forward(self, x):\n"
    "        return x\n\ndef get_inputs():\n    return [torch.randn(2)]\n\n"
    "def get_init_inputs():\n    return [2, 2]\n"
)
# a Linear layer, then activations and arithmetic: every helper of the elementwise seed
_ELEMENTWISE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, y):
        x = torch.relu(self.fc(x)) * 2.0
        return torch.tanh(x) - torch.sigmoid(y) + x

def get_inputs():
    return [torch.rand(4, 8), torch.rand(4, 8)]

def get_init_inputs():
    return []
"""
_RECURRENT = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, 2, batch_first=True)
        self.gru = nn.GRU(16, 16, bidirectional=True)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        out, _ = self.lstm(x)
        out, _ = self.gru(out)
        return self.fc(out[:, -1, :])

def get_inputs():
    return [torch.rand(2, 5, 8)]

def get_init_inputs():
    return []
"""
# every library call the own-kernel seeds replace, so one render holds every kernel source of theirs
_ALL_CALLS = (
    "torch.mm",
    "torch.convolution",
    "torch.ops.aten._scaled_dot_product_efficient_attention.default",
    "torch.ops.aten._transformer_encoder_layer_fwd.default",
)


def _sources() -> dict[str, str]:
    return {
        "gemm_tunables": "\n".join(own_gemm.GEMM_TUNABLES),
        "gemm": own_gemm.GEMM_SOURCE,
        "conv_tunables": "\n".join(own_conv.CONV_TUNABLES),
        "conv": own_conv.CONV_SOURCE,
        "attention_tunables": "\n".join(own_attention.ATTENTION_TUNABLES),
        "attention": own_attention.ATTENTION_SOURCE,
        "encoder": own_encoder.ENCODER_SOURCE,
        "tf32_split": tf32_split.TF32_SPLIT_SOURCE,
        "tf32_split_kernel": tf32_split.TF32_SPLIT_KERNEL_SOURCE,
        "interpreter_reductions": INTERPRETER_REDUCTIONS_SOURCE,
        "tanh": "\n" + kernel_source("tanh"),  # pasted by the elementwise and recurrent modules
        "elementwise": elementwise_source.ELEMENTWISE_SOURCE,
        "recurrent": recurrent_source.RECURRENT_SOURCE,
        "own_rnn_matmul": recurrent_source.OWN_RNN_MATMUL,
        "library_rnn_matmul": recurrent_source.LIBRARY_RNN_MATMUL,
        "own_linear": recurrent_source.OWN_LINEAR_SOURCE,
    }


def _compiler_seed(fixture: str, own_kernels: bool, interpreter: bool, calls: tuple[str, ...] = ()) -> str:
    program = parse((_H200 / fixture).read_text())
    if calls:  # as though the steps called these too: render pastes in the sources they need
        program = dataclasses.replace(program, library_calls=(*program.library_calls, *calls))
    shaped = ShapeProgram("default", ((1,),), (), program)
    return render(_LINEAR, [shaped], fixture, interpreter=interpreter, own_kernels=own_kernels)[0]


def _elementwise_seed(own_kernels: bool, interpreter: bool) -> str:
    return elementwise_candidate(_ELEMENTWISE, own_kernels=own_kernels, interpreter=interpreter)[0]


def _recurrent_seed(own_kernels: bool) -> str:
    return recurrent_candidate(_RECURRENT, own_kernels=own_kernels)[0]


# whole candidates: the GEMM with a fused epilogue (gemm_epilogue copies its kernel), the library
# convolution with the TF32 split, every own kernel at once (for the interpreter), and the elementwise and
# recurrent seeds with and without our GEMM
CANDIDATES: dict[str, Callable[[], str]] = {
    "candidate_L2_70_own": lambda: _compiler_seed("L2_70_0.py", True, False),
    "candidate_L2_69_library": lambda: _compiler_seed("L2_69_0.py", False, False),
    "candidate_all_own_interpreter": lambda: _compiler_seed("L2_70_0.py", True, True, _ALL_CALLS),
    "candidate_elementwise": lambda: _elementwise_seed(False, False),
    "candidate_elementwise_own": lambda: _elementwise_seed(True, False),
    "candidate_recurrent": lambda: _recurrent_seed(False),
    "candidate_recurrent_own": lambda: _recurrent_seed(True),
}


def cases() -> dict[str, str]:
    """Case name -> its text today."""
    return {**_sources(), **{name: make() for name, make in CANDIDATES.items()}}


if __name__ == "__main__":  # rewrites the goldens: for a deliberate change only (see above)
    GOLDENS.mkdir(parents=True, exist_ok=True)
    for name, text in cases().items():
        (GOLDENS / f"{name}.txt").write_text(text)
