"""Our Triton GEMM (compiler seeds, strict mode) on every operand layout and fp32 precision; the convolution's sm_90 build too.

The kernel runs under Triton's interpreter on CPU (tests/conftest.py); sizes are not multiples of the
blocks, and the blocks are small enough for several tiles and K steps, so every mask is exercised.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import torch

from kernelevolve.variation.compiler.own_conv import CONV_SOURCE, CONV_TUNABLES
from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES
from kernelevolve.variation.compiler.program import parse
from kernelevolve.variation.compiler.render import ShapeProgram, render
from kernelevolve.variation.tunables import apply_values, find_tunables
from tests.source_module import build_for_hopper, load_source

H200 = Path(__file__).parent / "fixtures" / "inductor_h200"
SMALL_BLOCKS = {"MM_BLOCK_M": 16, "MM_BLOCK_N": 32, "MM_BLOCK_K": 16, "MM_GROUP_M": 2}
M, N, K = 37, 70, 45  # no block divides any of them


def _gemm_module(tmp_path: Path, **values: object) -> ModuleType:
    """GEMM_SOURCE as a module of its own: Triton reads kernel source from a real file."""
    header = "import torch\nimport triton\nimport triton.language as tl\n"
    source = apply_values("\n".join([header, *GEMM_TUNABLES, GEMM_SOURCE]), {**SMALL_BLOCKS, **values})
    return load_source(source, tmp_path, "own_gemm_candidate")


# Compiles (no launch) the kernel for sm_90 in a process of its own: Triton decides at import whether
# it interprets, and the interpreter accepts code the compiler rejects (inconsistent return types).
_HOPPER_BUILD = """
import importlib.util, itertools, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
kernel = module._ke_matmul_kernel
def build(kernel, constants):
    types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") else
             "fp32" if n in ("alpha", "beta") else "i32" for n in kernel.arg_names}
    indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
    triton.compile(ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32))

for precision, a_t, b_t, split in itertools.product(
    ["ieee", "tf32x3", "bf16x3"], [False, True], [False, True], [1, 4]
):
    build(kernel, dict(HAS_BIAS=True, PRECISION=precision, A_M_CONTIGUOUS=a_t, B_K_CONTIGUOUS=b_t,
                       SPLIT_K=split, HAS_EPILOGUE=False, STORE_C=True, BLOCK_M=64, BLOCK_N=128, BLOCK_K=32,
                       GROUP_M=8))
build(module._ke_split_k_sum, dict(HAS_BIAS=True, SPLIT_K=4, BLOCK=1024))
"""


_HOPPER_CONV_BUILD = """
import importlib.util, itertools, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

spec = importlib.util.spec_from_file_location("conv_candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
# both K loops; transposed with the arguments a launch specialises to 1 as constants (a 1-D
# convolution's depth and height, a dimension without stride or dilation)
ONES = ("KD", "KH", "step_d", "dil_d", "kstep_d", "inv_d", "kstep_w")
for name, precision, transposed in itertools.product(
    ["_ke_conv_kernel", "_ke_conv_taps_kernel"], ["ieee", "tf32x3", "bf16x3"], [False, True]
):
    kernel = getattr(module, name)
    ones = {n: 1 for n in ONES if n in kernel.arg_names and transposed}
    constants = dict(TRANSPOSED=transposed, HAS_BIAS=True, PRECISION=precision, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **ones)
    types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") else "i32" for n in kernel.arg_names}
    indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
    triton.compile(ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32))
depthwise = module._ke_depthwise_kernel
constants = dict(HAS_BIAS=True, BLOCK=256)
types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") else "i32" for n in depthwise.arg_names}
indexed = {(depthwise.arg_names.index(n),): v for n, v in constants.items()}
triton.compile(ASTSource(depthwise, types, indexed), target=GPUTarget("cuda", 90, 32))
"""


def _operand(rows: int, cols: int, transposed: bool, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A [rows, cols] operand, row-major or a transposed view (contiguous down its rows)."""
    return torch.randn(cols, rows, dtype=dtype).t() if transposed else torch.randn(rows, cols, dtype=dtype)


@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
@pytest.mark.parametrize("a_transposed", [False, True], ids=["a_row_major", "a_m_contiguous"])
@pytest.mark.parametrize("b_transposed", [False, True], ids=["b_row_major", "b_k_contiguous"])
def test_matmul_matches_torch_on_every_layout(
    tmp_path: Path, precision: str, a_transposed: bool, b_transposed: bool
) -> None:
    # The interpreter accepts "tf32x3" but computes every dot in fp32: this checks that the tunable
    # compiles and launches, not 3xTF32's accuracy on tensor cores.
    gemm = _gemm_module(tmp_path, MM_FP32_PRECISION=precision)
    torch.manual_seed(0)
    a, b = _operand(M, K, a_transposed), _operand(K, N, b_transposed)
    assert gemm._rows_contiguous(a.stride(0), a.stride(1)) == a_transposed
    assert gemm._rows_contiguous(b.stride(0), b.stride(1)) == b_transposed
    torch.testing.assert_close(gemm._matmul(a, b), a @ b, atol=1e-4, rtol=1e-4)


def test_linear_epilogue_with_a_transposed_weight(tmp_path: Path) -> None:
    """nn.Linear as Inductor calls it: addmm(bias, x, reinterpret_tensor(w, (K, N), (1, K)))."""
    gemm = _gemm_module(tmp_path)
    torch.manual_seed(0)
    x, weight, bias = torch.randn(M, K), torch.randn(N, K), torch.randn(N)
    out = gemm._matmul(x, weight.t(), bias=bias, alpha=0.5, beta=2.0)
    torch.testing.assert_close(
        out, torch.addmm(bias, x, weight.t(), alpha=0.5, beta=2.0), atol=1e-4, rtol=1e-4
    )


def test_batched_operands_with_k_contiguous_b(tmp_path: Path) -> None:
    gemm = _gemm_module(tmp_path)
    torch.manual_seed(0)
    a, b = torch.randn(3, M, K), torch.randn(3, N, K).transpose(1, 2)
    out = torch.empty(3, M, N)
    assert gemm._matmul(a, b, out=out) is out
    torch.testing.assert_close(out, torch.bmm(a, b), atol=1e-4, rtol=1e-4)


def test_a_layouts_plan_is_reused_for_fresh_operands_and_only_for_that_layout(tmp_path: Path) -> None:
    """`_matmul` works its launch out once per operand layout (host time on host-bound strict results):
    a second call with fresh operands of the same layout reuses the plan and reads the new data; another
    layout, an `out` given or a bias gets a plan of its own."""
    gemm = _gemm_module(tmp_path)
    torch.manual_seed(0)
    for _ in range(2):
        x, weight, bias = torch.randn(M, K), torch.randn(N, K), torch.randn(N)
        torch.testing.assert_close(gemm._matmul(x, weight.t(), bias=bias), torch.addmm(bias, x, weight.t()))
    assert len(gemm._ke_mm_plans) == 1
    x = torch.randn(M, K)
    torch.testing.assert_close(gemm._matmul(x, weight.t()), x @ weight.t())
    out = torch.full((M, N), float("nan"))
    row_major = weight.t().contiguous()  # another layout of B
    assert gemm._matmul(x, row_major, out=out, alpha=2.0) is out
    torch.testing.assert_close(out, 2.0 * (x @ row_major))
    assert len(gemm._ke_mm_plans) == 3
    # a split-K plan: its workspace is made fresh each call, the split sum reads the call's partials
    a, b = torch.randn(4, 16 * 64), torch.randn(16 * 64, 3)
    for _ in range(2):
        a = a + 1
        torch.testing.assert_close(gemm._matmul(a, b), a @ b, atol=1e-4, rtol=1e-4)
    (split_plan,) = [plan for key, plan in gemm._ke_mm_plans.items() if key[0][0] == (4, 16 * 64)]
    assert split_plan[1][2] > 1 and split_plan[5] is not None


def test_half_precision_keeps_tritons_default_dot(tmp_path: Path) -> None:
    """MM_FP32_PRECISION applies to fp32 only; fp16 launches with Triton's default input precision."""
    gemm = _gemm_module(tmp_path, MM_FP32_PRECISION="ieee")
    torch.manual_seed(0)
    a, b = _operand(M, K, False, torch.float16), _operand(K, N, True, torch.float16)
    expected = (a.float() @ b.float()).half()
    torch.testing.assert_close(gemm._matmul(a, b), expected, atol=1e-2, rtol=1e-2)


def test_fp32_precision_is_a_tunable_of_the_strict_seed() -> None:
    """The seed for KernelBench L2/70 (nn.Linear through mm on a transposed weight) on the H200."""
    reference = (
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self, i, o):\n"
        "        super().__init__()\n        self.gemm = nn.Linear(i, o)\n\n    def forward(self, x):\n"
        "        return x\n\ndef get_inputs():\n    return [torch.randn(2)]\n\n"
        "def get_init_inputs():\n    return [2, 2]\n"
    )
    shaped = ShapeProgram("default", ((1,),), (), parse((H200 / "L2_70_0.py").read_text()))
    source, _ = render(reference, [shaped], "L2_70", own_kernels=True)
    tunables = {t.name: t for t in find_tunables(source)}
    precision = tunables["MM_FP32_PRECISION"]
    assert precision.declared and precision.value == "ieee"
    assert precision.choices == ("ieee", "tf32x3", "bf16x3")
    # Triton's interpreter rejects a bf16x3 dot: the CPU platform's seeds do not offer it
    interpreted, _ = render(reference, [shaped], "L2_70", interpreter=True, own_kernels=True)
    assert {t.name: t for t in find_tunables(interpreted)}["MM_FP32_PRECISION"].choices == ("ieee", "tf32x3")
    tuned = find_tunables(apply_values(source, {"MM_FP32_PRECISION": "tf32x3"}))
    assert {t.name: t.value for t in tuned}["MM_FP32_PRECISION"] == "tf32x3"


def test_every_layout_and_precision_compiles_for_hopper(tmp_path: Path) -> None:
    pytest.importorskip("triton.backends.nvidia.compiler")
    _gemm_module(tmp_path)  # writes the candidate file
    cache = tmp_path / "triton_cache"
    build_for_hopper(_HOPPER_BUILD, str(tmp_path / "own_gemm_candidate.py"), cache=cache)
    # our implicit-GEMM convolution, plain and transposed, both K loops, at both fp32 precisions
    conv = tmp_path / "conv_candidate.py"
    conv.write_text(
        "\n".join(
            ["import torch\nimport triton\nimport triton.language as tl\n", *CONV_TUNABLES, CONV_SOURCE]
        )
    )
    build_for_hopper(_HOPPER_CONV_BUILD, str(conv), cache=cache)


@pytest.mark.parametrize("split", [0, 1, 3, 16], ids=["auto", "none", "three", "more_than_k_blocks"])
def test_split_k_sums_partials_before_the_epilogue(tmp_path: Path, split: int) -> None:
    """Few output tiles over a long K: partials per K range, summed in order, then alpha and bias."""
    gemm = _gemm_module(tmp_path, MM_SPLIT_K=split)
    torch.manual_seed(0)
    m, n, k = 5, 7, 300  # one tile, 19 K-blocks of 16 (not a multiple of any split)
    a, b, bias = torch.randn(2, m, k), torch.randn(2, k, n), torch.randn(n)
    expected = torch.baddbmm(bias, a, b, alpha=0.5, beta=2.0)
    out = gemm._matmul(a, b, bias=bias.expand(2, m, n), alpha=0.5, beta=2.0)
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)
    plain = gemm._matmul(a[0], b[0])
    torch.testing.assert_close(plain, a[0] @ b[0], atol=1e-4, rtol=1e-4)


def test_split_k_is_chosen_for_few_tiles_over_a_long_k(tmp_path: Path) -> None:
    gemm = _gemm_module(tmp_path, MM_BLOCK_K=32)
    assert gemm._split_k(tiles=4, k=524288) == 64  # KernelBench L1/6-like: 4 tiles for 132 SMs
    assert gemm._split_k(tiles=16, k=524288) == 16  # two waves' worth
    assert gemm._split_k(tiles=4096, k=524288) == 1  # enough tiles already
    assert gemm._split_k(tiles=4, k=64) == 1  # too short to split
    forced = _gemm_module(tmp_path, MM_SPLIT_K=4, MM_BLOCK_K=32)
    assert forced._split_k(tiles=4096, k=64) == 2  # forced, capped at the K-blocks there are


def test_depthwise_convolutions_take_the_direct_kernel(tmp_path: Path) -> None:
    """One input channel per group: the direct kernel, not a GEMM tile that would use one column."""
    header = "import torch\nimport triton\nimport triton.language as tl\n"
    source = "\n".join([header, *CONV_TUNABLES, CONV_SOURCE]).replace("DW_BLOCK = 256", "DW_BLOCK = 32")
    conv = load_source(source, tmp_path, "own_conv_candidate")

    class NoGemm:
        def __getitem__(self, grid: object) -> object:
            raise AssertionError("the implicit-GEMM kernel ran for a depthwise convolution")

    gemm_kernel, conv._ke_conv_kernel = conv._ke_conv_kernel, NoGemm()
    torch.manual_seed(0)
    x = torch.randn(2, 4, 9, 13)
    for weight, kwargs in (
        (torch.randn(4, 1, 3, 5), dict(stride=1, padding=(1, 2), groups=4)),
        (torch.randn(8, 1, 3, 3), dict(stride=2, padding=2, dilation=2, groups=4)),  # channel multiplier 2
    ):
        bias = torch.randn(weight.shape[0])
        expected = torch.nn.functional.conv2d(x, weight, bias, **kwargs)
        got = conv._conv(x, weight, bias, **kwargs)
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    conv._ke_conv_kernel = gemm_kernel  # a grouped convolution with 2 channels per group keeps the GEMM
    grouped = torch.randn(4, 2, 3, 3)
    torch.testing.assert_close(
        conv._conv(x, grouped, None, padding=1, groups=2),
        torch.nn.functional.conv2d(x, grouped, None, padding=1, groups=2),
        atol=1e-4,
        rtol=1e-4,
    )
