"""Inductor's pointwise kernel after our GEMM, fused into the GEMM's store (own-kernel compiler seeds).

The rendered seeds run under Triton's interpreter (tests/conftest.py); the fused GEMM is also built for
sm_90 without a GPU.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from kernelevolve.platforms import load_platform
from kernelevolve.types import KernelSpec
from kernelevolve.variation.compiler.gemm_epilogue import EPILOGUE_SLOTS, fused_epilogue
from kernelevolve.variation.compiler.program import Unsupported, parse
from kernelevolve.variation.compiler.render import ShapeProgram, render
from kernelevolve.variation.compiler_seed import CompilerSeedOperator
from kernelevolve.variation.tunables import apply_values
from tests.gpu import gpu_platform_name, harness_reports, needs_cuda
from tests.kernelbench_data import KERNELBENCH, needs_kernelbench
from tests.proposal_context import seed_context
from tests.source_module import count_pointwise_launches, load_source

H200 = Path(__file__).parent / "fixtures" / "inductor_h200"
LINEAR_STAND_IN = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self, i, o):\n"
    "        super().__init__()\n        self.gemm = nn.Linear(i, o)\n\n    def forward(self, x):\n"
    "        return x\n\ndef get_inputs():\n    return [torch.randn(2)]\n\n"
    "def get_init_inputs():\n    return [2, 2]\n"
)
# Linear, then bias, ReLU, scaling and a residual of the GEMM's own output: one pointwise kernel
EPILOGUE_REFERENCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.linear = nn.Linear(i, o)
        self.shift = nn.Parameter(torch.randn(o))

    def forward(self, x):
        y = self.linear(x)
        return torch.relu(y + self.shift) * 0.5 + y

rows, features, outputs = ROWS, 45, OUTPUTS

def get_inputs():
    return [torch.randn(rows, features)]

def get_init_inputs():
    return [features, outputs]
"""


def _pointwise_kernel(body: str, params: str = "in_out_ptr0, in_ptr0, xnumel") -> object:
    source = (
        "@triton.jit\n"
        f"def triton_poi_fused_0({params}, XBLOCK: tl.constexpr):\n"
        "    xnumel = 2048\n"
        "    xoffset = tl.program_id(0) * XBLOCK\n"
        "    xindex = xoffset + tl.arange(0, XBLOCK)[:]\n"
        "    xmask = xindex < xnumel\n"
        "    x2 = xindex\n"
        "    x0 = xindex % 64\n" + body
    )
    module = (
        "async_compile.triton('triton_poi_fused_0', '''\n@triton_heuristics.pointwise(size_hints={'x': 2048})\n"
        + source.replace("@triton.jit\n", "")
        + "''', device_str='cuda')\n\ndef call(args):\n    in_out_ptr0, in_ptr0 = args\n"
        "    triton_poi_fused_0.run(in_out_ptr0, in_ptr0, 2048, stream=stream0)\n"
    )
    return parse(module).kernels[0]


def test_the_body_runs_on_the_tile_with_the_accumulator_for_the_output_load() -> None:
    (kernel,) = parse((H200 / "L2_70_0.py").read_text()).kernels
    epilogue = fused_epilogue(kernel, "k_s0", "in_out_ptr0")
    function = epilogue.source.split("\n\n\n")[0]
    assert function.splitlines()[1] == (
        "def _ke_epilogue_k_s0(value, xindex, xmask, in_out_ptr0, in_ptr0, "
        + ", ".join(f"_ke_slot{i}" for i in range(2, EPILOGUE_SLOTS))
        + "):"
    )
    assert "tmp1 = value" in function  # was tl.load(in_out_ptr0 + x2, None)
    # Inductor left the loads and the store unmasked (XBLOCK divides 8388608); a tile's edges need xmask
    assert "tl.load(in_ptr0 + x0, xmask, eviction_policy='evict_last')" in function
    assert "tl.store(in_out_ptr0 + x2, tmp6, xmask)" in function
    # a data mask Inductor left alone (xmask all true) is narrowed to the tile's lanes too
    data_masked = _pointwise_kernel(
        "    tmp0 = tl.load(in_out_ptr0 + x2, xmask)\n    tmp1 = tmp0 > 0\n"
        "    tmp2 = tl.load(in_ptr0 + x2, tmp1, other=0.0)\n    tl.store(in_out_ptr0 + x2, tmp0 + tmp2, xmask)\n"
    )
    body = fused_epilogue(data_masked, "k", "in_out_ptr0").source  # type: ignore[arg-type]
    assert "tl.load(in_ptr0 + x2, tmp1 & xmask, other=0.0)" in body
    assert "xoffset" not in function and "XBLOCK" not in function
    assert epilogue.writes_output and epilogue.host_kernels == ("_ke_matmul_kernel_k_s0",)
    assert "def _ke_matmul_kernel_k_s0(" in epilogue.source and "_ke_epilogue_k_s0(acc.to(" in epilogue.source


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            "    tmp0 = tl.load(in_out_ptr0 + x0, xmask)\n    tl.store(in_ptr0 + x2, tmp0, xmask)\n",
            "in_out_ptr0",
        ),
        (
            "    tmp0 = tl.load(in_out_ptr0 + x2, xmask)\n    tmp1 = tl.full([XBLOCK], 0, tl.int32)\n"
            "    tl.store(in_out_ptr0 + x2, tmp0 + tmp1, xmask)\n",
            "XBLOCK",
        ),
        ("    tmp0 = tl.load(in_out_ptr0 + x2, xmask)\n", "stores nothing"),
        (
            "    tmp0 = tl.load(in_out_ptr0 + x2, xmask & (x0 < 8), other=0.0)\n"
            "    tl.store(in_out_ptr0 + x2, tmp0, xmask)\n",
            "under the mask",
        ),
        (
            "    tmp0 = tl.load(in_out_ptr0 + x2, xmask)\n    tl.store(in_out_ptr0 + x2, tmp0 * 2, xmask & (x0 < 8))\n",
            "under the mask",
        ),
    ],
    ids=[
        "output_at_another_index",
        "block_shaped_constant",
        "no_store",
        "output_read_under_another_mask",
        "output_written_under_another_mask",
    ],
)
def test_a_body_that_needs_more_than_its_own_lane_is_left_as_a_launch(body: str, reason: str) -> None:
    with pytest.raises(Unsupported, match=reason):
        fused_epilogue(_pointwise_kernel(body), "k", "in_out_ptr0")  # type: ignore[arg-type]


def test_the_h200_seed_passes_the_launch_to_the_gemm() -> None:
    shaped = ShapeProgram("default", ((1,),), (), parse((H200 / "L2_70_0.py").read_text()))
    source, _ = render(LINEAR_STAND_IN, [shaped], "L2_70", own_kernels=True)
    call = source[source.index("def _call_s0") :]
    name = "triton_poi_fused_add_addmm_mul_sigmoid_0_s0"
    assert (
        f"epilogue=(_ke_matmul_kernel_{name}, _launch_{name}, (buf0, arg1_1, 8388608), (buf0, arg1_1), True)"
        in call
    )
    assert "epilogue_numel=8388608" in call
    assert f"\n    _launch_{name}(" not in call  # the launch itself is gone from the host steps
    assert 'MM_EPILOGUE = "fused"  # tune: "fused", "separate"' in source
    plain, _ = render(LINEAR_STAND_IN, [shaped], "L2_70", own_kernels=False)
    assert "epilogue" not in plain.lower()


def test_a_gemm_output_with_padded_rows_keeps_its_epilogue_launch() -> None:
    """On the GPU Inductor pads a 3000-wide output's rows to 3008: its pointwise kernel then writes a new
    unpadded buffer, allocated between the two launches, and reads the GEMM's output off its own lane
    (`x0 + 3008*x1`), so the launch stays after the GEMM (found by the H200 preflight)."""
    shaped = ShapeProgram("default", ((1,),), (), parse((H200 / "epilogue_padded_0.py").read_text()))
    source, _ = render(LINEAR_STAND_IN, [shaped], "padded", own_kernels=True)
    call = source[source.index("def _call_s0") :]
    assert "_matmul(" in call and "epilogue=(" not in call
    assert "\n    _launch_triton_poi_fused_add_addmm_mul_relu_0_s0(" in call


def _seed_module(tmp_path: Path, rows: int, outputs: int, **values: object) -> tuple[ModuleType, object]:
    reference = EPILOGUE_REFERENCE.replace("ROWS", str(rows)).replace("OUTPUTS", str(outputs))
    spec = KernelSpec(
        name=f"gemm_epilogue_{rows}x{outputs}", reference_source=reference, atol=1e-4, rtol=1e-4
    )
    seeds = CompilerSeedOperator(strict=True).propose(seed_context(spec, load_platform("cpu")))
    (own,) = [c for c in seeds if c.metadata["own_kernels"]]
    assert "epilogue=(" in own.source
    source = apply_values(own.source, {"MM_BLOCK_M": 16, "MM_BLOCK_N": 32, **values})
    module = load_source(source, tmp_path, f"seed_{rows}_{outputs}_{len(values)}")
    namespace: dict[str, object] = {}
    exec(compile(reference, "<reference>", "exec"), namespace)
    return module, namespace


@pytest.mark.parametrize(
    ("rows", "outputs"),
    [(37, 70), (32, 64)],
    ids=["masked_by_inductor", "unmasked_by_inductor_but_not_by_the_tile"],
)
@pytest.mark.parametrize(
    ("values", "launches"),
    [({}, 0), ({"MM_EPILOGUE": "separate"}, 1), ({"MM_SPLIT_K": 3}, 1)],
    ids=["fused", "separate", "split_k_falls_back"],
)
def test_the_fused_seed_matches_the_reference(
    tmp_path: Path, rows: int, outputs: int, values: dict[str, object], launches: int
) -> None:
    module, namespace = _seed_module(tmp_path, rows, outputs, **values)
    counted = count_pointwise_launches(module)
    torch.manual_seed(0)
    reference = namespace["Model"](45, outputs)  # type: ignore[operator]
    torch.manual_seed(0)
    candidate = module.ModelNew(45, outputs)
    x = torch.randn(rows, 45)
    torch.testing.assert_close(candidate(x), reference(x), atol=1e-4, rtol=1e-4)
    assert len(counted) == launches


# Built without launching, in a process of its own: Triton decides at import whether it interprets.
_HOPPER_BUILD = """
import importlib.util, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
kernel = getattr(module, sys.argv[2])
constants = dict(HAS_BIAS=False, PRECISION="tf32x3", A_M_CONTIGUOUS=False, B_K_CONTIGUOUS=True, SPLIT_K=1,
                 HAS_EPILOGUE=True, STORE_C=False, BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8)
types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") or n.startswith("e") else
         "fp32" if n in ("alpha", "beta") else "i32" for n in kernel.arg_names}
indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
triton.compile(ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32))
"""


def test_the_fused_gemm_of_the_h200_seed_compiles_for_hopper(tmp_path: Path) -> None:
    pytest.importorskip("triton.backends.nvidia.compiler")
    shaped = ShapeProgram("default", ((1,),), (), parse((H200 / "L2_70_0.py").read_text()))
    source, _ = render(LINEAR_STAND_IN, [shaped], "L2_70", own_kernels=True)
    path = tmp_path / "l2_70_seed.py"
    path.write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton_cache")
    kernel = "_ke_matmul_kernel_triton_poi_fused_add_addmm_mul_sigmoid_0_s0"
    build = [sys.executable, "-c", _HOPPER_BUILD, str(path), kernel]
    result = subprocess.run(build, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


@needs_kernelbench
@pytest.mark.parametrize("problem", [9, 40, 45, 86])
def test_kernelbench_gemm_epilogues_fuse_and_match(tmp_path: Path, problem: int) -> None:
    """Level-2 GEMM problems at CPU sizes: subtract-multiply-ReLU, scaling-residual, sigmoid before a
    LogSumExp reduction (which stays a launch), GELU. Of the 18 problems in L2/9-L2/88 with an own seed
    on the CPU, 15 fused (the others follow the GEMM with a reduction) and all 18 matched, 2026-11-30."""
    from kernelevolve.specs import reference as ref
    from kernelevolve.specs.loading import resolve_spec

    platform = load_platform("cpu")
    spec = resolve_spec(f"kernelbench:2/{problem}", platform, {"kernelbench": {"path": str(KERNELBENCH)}})
    seeds = CompilerSeedOperator(strict=True).propose(seed_context(spec, platform))
    (own,) = [c for c in seeds if c.metadata["own_kernels"]]
    assert "epilogue=(" in own.source
    candidate_module = load_source(own.source, tmp_path, f"kb_l2_{problem}")
    counted = count_pointwise_launches(candidate_module)
    module = ref.load_reference(spec.reference_source)
    ref.apply_shape(module, spec.shapes[0])
    reference = ref.build_model(module.Model, module, 0, "cpu", torch.float32)
    candidate = ref.build_model(candidate_module.ModelNew, module, 0, "cpu", torch.float32)
    ref.perturb_constant_state(reference, candidate, 0)
    inputs = ref.make_inputs(module, 1, "cpu", torch.float32)
    with torch.no_grad():
        torch.testing.assert_close(candidate(*inputs), reference(*inputs), atol=spec.atol, rtol=spec.rtol)
    assert counted == []  # the pointwise kernel ran inside the GEMM


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("precision", ["ieee", "tf32x3", "bf16x3"])
def test_the_fused_seed_passes_the_harness_on_a_gpu(precision: str) -> None:
    """Inductor's CUDA code for the epilogue reference, fused, through an evaluation child on the GPU;
    against the same seed with the epilogue launched separately."""
    from kernelevolve.types import Status

    platform = load_platform(gpu_platform_name())
    # 3072 outputs: Inductor pads a 3000-wide output's rows, which leaves the launch separate (above)
    reference = EPILOGUE_REFERENCE.replace("ROWS", "1000").replace("OUTPUTS", "3072")
    spec = KernelSpec(name="gemm_epilogue_gpu", reference_source=reference, atol=1e-4, rtol=1e-4)
    seeds = CompilerSeedOperator(strict=True).propose(seed_context(spec, platform))
    own = next(
        c
        for c in seeds
        if c.metadata["own_kernels"] and c.metadata.get("fp32_precision", "ieee") == precision
    )
    assert "epilogue=(" in own.source
    separate = dataclasses.replace(own, source=apply_values(own.source, {"MM_EPILOGUE": "separate"}))
    for report in harness_reports([own, separate], spec, platform.name):
        assert report.status is Status.OK, report.feedback
