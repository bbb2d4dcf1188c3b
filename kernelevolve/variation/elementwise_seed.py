"""The elementwise-seed operator: the reference as written, with its elementwise steps in our kernels.

Arity 0, permissive runs only: the library work (GEMMs, convolutions, reductions) stays PyTorch's. The
candidate is the reference copied (reference_copy.py) with
- activation modules (`nn.ReLU()`, `nn.ReLU6(inplace=True)`, `nn.Tanh()`, `nn.Sigmoid()`) as ours, which
  write a new tensor where the reference's wrote in place (KernelBench's networks use inplace=True);
- one-argument activation calls (`torch.relu(x)`, `F.tanh(x)`, ...) as ours;
- `+ - * /` between an expression and a number or a `self.` attribute, and `+ - *` between two other
  expressions, in functions other than `__init__` (its arithmetic, like the module's and the class's, is
  on sizes), through a helper that decides at run time: our kernel for an fp32 tensor and a number or for
  two fp32 tensors (broadcast as PyTorch does), PyTorch's operation for anything else. Division by a
  tensor stays PyTorch's: Triton's fp32 `/` is not correctly rounded, PyTorch's is.
Every other line of the model stays as it was, so state kept between calls, control flow and the order
of random initialisation are the reference's. Compiler seeds cannot cover such models (L3/33 reassigns a
tensor attribute on every call), nor outputs so ill-conditioned that only eager's own summation order
passes (L2/14; L3/48-49, Mamba2, whose only elementwise steps are differences and sums of two tensors):
this seed keeps both, and gives those problems a verified candidate.

It is offered only where the reference also does library work: a model that is all elementwise is
better served by the template and compiler seeds, which fuse it.

Its own-kernels twin also builds the reference's nn.Linear layers as ours (`_KeLinear`, our Triton GEMM
with its fp32 products on 3xBF16 tensor cores, a tunable) and concatenates with copies into one
allocation instead of torch.cat, so a model of Linear layers, elementwise steps and concatenation (L3/33)
gets a strict result and our GEMM's speed; offered in strict runs too, and only where the strict checks
pass it (a convolution left to PyTorch fails them).
"""

from __future__ import annotations

import ast

from kernelevolve.variation.elementwise_source import ACTIVATIONS, ELEMENTWISE_SOURCE, tables_source
from kernelevolve.variation.recurrent_source import LINEAR_CLASS, OWN_LINEAR_SOURCE, OWN_RNN_MATMUL
from kernelevolve.variation.reference_copy import ReferenceCopySeed, reference_statements, unparse

_HEADER = (
    "import math\nimport os\nimport struct\n\nimport torch\nimport torch.nn as nn\n"
    "import triton\nimport triton.language as tl\n"
)
_ACTIVATION_MODULES = {"ReLU": "relu", "ReLU6": "relu6", "Tanh": "tanh", "Sigmoid": "sigmoid"}
_MODULE_PREFIXES = ("", "nn.", "torch.nn.")
_FUNCTION_PREFIXES = ("torch.", "F.", "nn.functional.", "torch.nn.functional.")
_ARITHMETIC = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
# names whose presence means the model does work the seed leaves to PyTorch's libraries
_LIBRARY_WORK = frozenset(
    {
        "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
        "ConvTranspose3d", "LSTM", "GRU", "RNN", "MultiheadAttention", "Embedding", "matmul", "mm", "bmm",
        "addmm", "baddbmm", "einsum", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
        "conv_transpose2d", "conv_transpose3d", "scaled_dot_product_attention",
    }
)  # fmt: skip


class ElementwiseSeedOperator(ReferenceCopySeed):
    name = "elementwise_seed"
    metadata_key = "elementwise"

    def make(self, reference_source: str) -> tuple[str, list[str]]:
        return elementwise_candidate(reference_source)

    def make_own(self, reference_source: str, interpreter: bool) -> tuple[str, list[str]]:
        return elementwise_candidate(reference_source, own_kernels=True, interpreter=interpreter)


# torch.cat as one allocation and a copy into each slice: strict runs allow copies, not torch.cat
CAT_SOURCE = """
def _ke_cat(tensors, dim=0):
    tensors = list(tensors)
    dim = dim % tensors[0].dim()
    shape = list(tensors[0].shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    out = torch.empty(shape, device=tensors[0].device, dtype=dtype)
    start = 0
    for t in tensors:
        out.narrow(dim, start, t.shape[dim]).copy_(t)
        start += t.shape[dim]
    return out
"""
_CAT_FUNCTIONS = ("torch.cat", "torch.concat", "torch.concatenate")
# the twin leaves nothing to PyTorch: where the seed falls back to PyTorch's operation (a tensor our kernels
# do not take), the twin's helpers raise, and the candidate fails its check instead of computing in PyTorch
_STRICT_FALLBACKS = (
    (
        """        if name in ("relu", "relu6"):
            return torch.clamp(x, 0, 6) if name == "relu6" else torch.relu(x)
        return torch.tanh(x) if name == "tanh" else torch.sigmoid(x)
""",
        """        raise TypeError(f"our {name} kernel takes fp32 tensors only (strict: no PyTorch fallback)")
""",
    ),
    (
        """def _ke_python_arithmetic(a, b, name):
""",
        """def _ke_python_arithmetic(a, b, name):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        raise TypeError(f"our {name} kernel takes fp32 tensors only (strict: no PyTorch fallback)")
""",
    ),
)
# the twin's GEMMs on 3xBF16 tensor cores (fp32 to about 16 bits of mantissa, within 1e-4 for
# KernelBench's sizes): exact fp32 in our GEMM is several times slower than cuBLAS's
_OWN_GEMM_PRECISION = ('MM_FP32_PRECISION = "ieee"', 'MM_FP32_PRECISION = "bf16x3"')


class _Substitute(ast.NodeTransformer):
    def __init__(self, own_kernels: bool = False) -> None:
        self.own_kernels = own_kernels
        self.replaced: list[str] = []
        self.tensor_division = False  # a `/` in a method whose divisor may be a tensor, left to PyTorch
        self.library_work = False
        self._in_method = False  # in a function's body, other than __init__'s

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        outer, self._in_method = self._in_method, node.name != "__init__"
        self.generic_visit(node)
        self._in_method = outer
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        self.library_work |= node.id in _LIBRARY_WORK
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        self.library_work |= node.attr in _LIBRARY_WORK
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = ast.unparse(node.func)
        kind = func.rsplit(".", 1)[-1]
        if self.own_kernels and func in ("Linear", *(p + "Linear" for p in _MODULE_PREFIXES)):
            self.replaced.append("Linear")
            node.func = ast.Name(LINEAR_CLASS, ast.Load())
            return node
        if self.own_kernels and func in _CAT_FUNCTIONS:
            self.replaced.append("cat")
            node.func = ast.Name("_ke_cat", ast.Load())
            return node
        if kind in _ACTIVATION_MODULES and func in (p + kind for p in _MODULE_PREFIXES):
            if not _only_inplace(node):
                return node
            self.replaced.append(_ACTIVATION_MODULES[kind])
            return _call("_KeActivation", ast.Constant(_ACTIVATION_MODULES[kind]))
        if kind in ACTIVATIONS and func in (p + kind for p in _FUNCTION_PREFIXES):
            if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
                return node
            self.replaced.append(kind)
            return _call("_ke_activation", node.args[0], ast.Constant(kind))
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = _ARITHMETIC.get(type(node.op))
        numbers = _maybe_number(node.left) + _maybe_number(node.right)
        if name is None or not self._in_method or numbers == 2:
            return node
        if name == "div" and not _maybe_number(node.right):
            self.tensor_division = True
            return node  # over a tensor would divide in the kernel, not correctly rounded: PyTorch's
        self.replaced.append(name if numbers else f"{name}_tensors")
        return _call("_ke_arithmetic", node.left, node.right, ast.Constant(name))


def _only_inplace(node: ast.Call) -> bool:
    """No arguments but `inplace`. Ours writes a new tensor: the reference's in-place one gives the same
    values, and a model that read its input again after the activation fails the correctness check."""
    arguments = [*node.args, *(k.value for k in node.keywords if k.arg == "inplace")]
    named_others = [k for k in node.keywords if k.arg != "inplace"]
    return len(arguments) <= 1 and not named_others and all(isinstance(a, ast.Constant) for a in arguments)


def _maybe_number(node: ast.expr) -> bool:
    """A numeric literal, or a `self.` attribute (a constructor argument, in KernelBench's models)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _call(function: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(function, ast.Load()), list(args), [])


def elementwise_candidate(
    reference_source: str, own_kernels: bool = False, interpreter: bool = False
) -> tuple[str, list[str]]:
    """(candidate source, the operations replaced, one entry per place); nothing replaced where the
    reference has no elementwise step of ours or does no library work. `own_kernels`: the twin with the
    Linear layers and concatenations ours too (nothing where it has no Linear layer); its GEMMs in exact
    fp32 for Triton's `interpreter`, which takes no bf16x3 dot."""
    substitute = _Substitute(own_kernels)
    kept = reference_statements(reference_source, substitute)
    if not substitute.library_work or not set(substitute.replaced) - {"Linear", "cat"}:
        return "", []
    if own_kernels and ("Linear" not in substitute.replaced or substitute.tensor_division):
        return "", []  # a division by a tensor stays PyTorch's, which strict runs do not allow
    what = "its Linear layers and elementwise steps" if own_kernels else "its elementwise steps"
    source = f'"""The reference with {what} in our kernels (elementwise_seed)."""\n\n{_HEADER}'
    if own_kernels:
        gemm = (
            OWN_RNN_MATMUL.replace(', "bf16x3"', "")
            if interpreter
            else OWN_RNN_MATMUL.replace(*_OWN_GEMM_PRECISION)
        )
        assert gemm != OWN_RNN_MATMUL, "the GEMM's precision tunable moved"
        source += gemm + OWN_LINEAR_SOURCE + CAT_SOURCE + "\n"
    elementwise = ELEMENTWISE_SOURCE
    for fallback, strict in _STRICT_FALLBACKS if own_kernels else ():
        assert fallback in elementwise, "the elementwise helpers' PyTorch fallback moved"
        elementwise = elementwise.replace(fallback, strict)
    body = elementwise + "\n\n" + tables_source() + "\n\n" + unparse(kept) + "\n"
    return source + body, substitute.replaced
