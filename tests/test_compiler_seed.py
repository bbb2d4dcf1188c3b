"""Compiler seeds: Inductor's code for the reference, made a standalone candidate (CPU: interpreter)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelevolve.eval.static.checks import check_source
from kernelevolve.platforms import load_platform
from kernelevolve.specs.loading import resolve_spec
from kernelevolve.types import Candidate, EvalRequest, EvalSettings, KernelSpec, ShapeCase, Status
from kernelevolve.variation.compiler.program import Unsupported, parse
from kernelevolve.variation.compiler.render import RenderError, ShapeProgram, for_interpreter, render
from kernelevolve.variation.compiler_seed import CompilerSeedOperator
from kernelevolve.variation.tunables import apply_values, find_tunables
from tests.gpu import gpu_platform_name
from tests.proposal_context import seed_context

if TYPE_CHECKING:
    from kernelevolve.eval.local import LocalEvaluator

H200 = Path(__file__).parent / "fixtures" / "inductor_h200"


# Stand-in references with the parameters the fixtures' problems create (only __init__ matters here).
NO_PARAMS = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n\n    def forward(self, x):\n        return x\n\n"
    "def get_inputs():\n    return [torch.randn(2)]\n\ndef get_init_inputs():\n    return []\n"
)
LINEAR = NO_PARAMS.replace(
    "def __init__(self):\n        super().__init__()",
    "def __init__(self, i, o):\n        super().__init__()\n        self.gemm = nn.Linear(i, o)",
)
FIXTURES = {  # file -> (reference stand-in, library calls, kernel kinds)
    "L1_22_0.py": (NO_PARAMS, (), ["pointwise"]),
    "L1_40_0.py": (NO_PARAMS, (), ["reduction", "persistent_reduction", "pointwise"]),
    "L1_53_0.py": (NO_PARAMS, (), ["reduction"]),
    "L1_90_0.py": (NO_PARAMS, (), ["reduction"]),
    "L2_62_0.py": (LINEAR, ("torch.addmm",), ["persistent_reduction", "pointwise"]),
    "L2_69_0.py": (LINEAR, ("torch.convolution",), ["pointwise", "pointwise", "pointwise"]),
    "L2_70_0.py": (LINEAR, ("torch.mm",), ["pointwise"]),
}


def _shape_program(name: str) -> ShapeProgram:
    program = parse((H200 / name).read_text())
    return ShapeProgram("default", ((1,),), (), program)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_h200_inductor_code_becomes_a_candidate(name: str) -> None:
    reference, library, kinds = FIXTURES[name]
    shaped = _shape_program(name)
    assert [k.kind for k in shaped.program.kernels] == kinds
    assert shaped.program.library_calls == library
    source, params = render(reference, [shaped], name)
    assert "torch.compile" not in source and "async_compile" not in source and ".run(" not in source
    strict_codes = {issue.code for issue in check_source(source, "triton", True)}
    # Triton-only programs pass strict mode; library calls (cuBLAS/cuDNN through torch) need permissive
    assert strict_codes == ({"torch_compute_op"} if library else set()), strict_codes
    assert not check_source(source, "triton", False)
    declared = {t.name for t in find_tunables(source) if t.declared}
    # params: the kernels' own tunables; cuDNN convolutions and cuBLAS matmuls add their precision
    # (library_conv.py: with algorithm timing and the split's layout; library_gemm.py: with its K chunk)
    library_conv = (
        {"LIBRARY_CONV_FP32_PRECISION", "LIBRARY_CONV_BENCHMARK", "LIBRARY_CONV_SPLIT_LAYOUT"}
        if "torch.convolution" in library
        else set()
    )
    library_gemm = (
        {"LIBRARY_MM_FP32_PRECISION", "LIBRARY_MM_TF32_K_CHUNK"}
        if set(library) & {"torch.mm", "torch.addmm"}
        else set()
    )
    assert declared == set(params) | library_conv | library_gemm
    assert any(n.endswith("_WARPS") for n in declared)
    assert ("_library_matmul(" in source) == bool(library_gemm)
    if library:  # matmuls and convolutions: our own kernels in their place pass strict mode
        own, _ = render(reference, [shaped], name, own_kernels=True)
        assert not check_source(own, "triton", True)
        assert ("_conv(" in own) == ("torch.convolution" in library)


def test_unmasked_dimensions_only_take_dividing_blocks() -> None:
    shaped = _shape_program("L1_53_0.py")  # min over 4096 of 524160 rows: r0 unmasked? x masked
    kernel = shaped.program.kernels[0]
    assert kernel.numels == {"x": 524160, "r0_": 4096}
    _, params = render(NO_PARAMS, [shaped], "min")
    source, _ = render(NO_PARAMS, [_shape_program("L1_22_0.py")], "tanh")
    block_line = next(line for line in source.splitlines() if line.startswith("S0_K0_XBLOCK"))
    choices = [int(v) for v in block_line.split("# tune:")[1].split(",")]
    assert all(1610612736 % c == 0 for c in choices)  # tanh's x has no mask


def test_grid_overflow_axis_is_split() -> None:
    source, _ = render(LINEAR, [_shape_program("L2_69_0.py")], "conv")
    assert "_grid_axis(triton.cdiv(ynumel, S0_K2_YBLOCK))" in source


def test_a_persistent_reduction_with_one_row_a_program_is_launched_a_row_a_program() -> None:
    """Inductor's `no_x_dim` persistent reductions (large rows on a GPU: RMSNorm's at 4096 columns on an
    H100) fix XBLOCK to 1 in the body instead of taking it as a launch parameter; the seed launches one
    program a row. Made here from the H200 LayerNorm fixture's persistent reduction, as Inductor writes it."""
    code = (H200 / "L1_40_0.py").read_text()
    signature = "out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):"
    assert code.count(signature) == 1 and code.count("    R0_BLOCK: tl.constexpr = 32\n") == 1
    code = code.replace(signature, "out_ptr1, xnumel, r0_numel):").replace(
        "    R0_BLOCK: tl.constexpr = 32\n", "    R0_BLOCK: tl.constexpr = 32\n    XBLOCK: tl.constexpr = 1\n"
    )
    shaped = ShapeProgram("default", ((1,),), (), parse(code))
    persistent = next(k for k in shaped.program.kernels if k.kind == "persistent_reduction")
    assert "XBLOCK" not in persistent.blocks and persistent.fixed_blocks["XBLOCK"] == 1
    source, _ = render(NO_PARAMS, [shaped], "layernorm")
    assert "triton.cdiv(xnumel, 1)" in source
    compile(source, "layernorm", "exec")
    assert not check_source(source, "triton", True)


def test_unsupported_code_says_why() -> None:
    code = (
        (H200 / "L1_22_0.py")
        .read_text()
        .replace("@triton_heuristics.pointwise(", "@triton_heuristics.foreach(")
    )
    with pytest.raises(Unsupported, match="foreach"):
        parse(code)
    host = (H200 / "L1_22_0.py").read_text().replace("buf0 = empty_strided_cuda(", "buf0 = alloc_from_pool(")
    with pytest.raises(Unsupported, match="alloc_from_pool"):
        parse(host)


def test_interpreter_rendering_maps_libdevice_to_tl_math() -> None:
    assert (
        for_interpreter("y = libdevice.rsqrt(x) + libdevice.exp(x)")
        == "y = tl.math.rsqrt(x) + tl.math.exp(x)"
    )
    with pytest.raises(
        RenderError, match="lgamma"
    ):  # tanh, signbit, nearbyint: ours (test_interpreter_libdevice)
        for_interpreter("y = libdevice.lgamma(x)")


def test_static_checks_allow_only_triton_device_helpers() -> None:
    kernel = (
        "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
        "from torch._inductor.runtime import triton_helpers\n"
        "@triton.jit\ndef k(x_ptr, B: tl.constexpr):\n    x = tl.load(x_ptr + tl.arange(0, B))\n"
        "    tl.store(x_ptr + tl.arange(0, B), HELPER)\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        out = x.clone()\n"
        "        k[(1,)](out, B=16)\n        return out\n"
    )
    assert not check_source(kernel.replace("HELPER", "triton_helpers.maximum(x, x)"), "triton", True)
    escaped = {
        i.code
        for i in check_source(kernel.replace("HELPER", "triton_helpers.triton.compile(x)"), "triton", True)
    }
    assert "torch_compile" in escaped


def test_compiler_seeds_are_verified_by_the_harness_on_cpu(cpu_evaluator: LocalEvaluator) -> None:
    """Through an evaluation child, as in a search: it imports Triton under the interpreter from the start."""
    platform = load_platform("cpu")
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1)
    for spec_name in ("softmax", "layernorm"):
        spec = resolve_spec(spec_name, platform)
        ctx = seed_context(spec, platform)
        operator = CompilerSeedOperator()
        (candidate,) = operator.propose(ctx)
        assert candidate.operator == "compiler_seed" and candidate.metadata["library_calls"] == []
        assert operator.propose(ctx) == [candidate]  # cached per spec
        report = cpu_evaluator.submit(EvalRequest(candidate, spec, platform.name, settings)).result()
        assert report.status is Status.OK, report.feedback
        assert set(report.latency) == {s.name for s in spec.shapes}

    # A GEMM with an epilogue: Inductor keeps addmm (strict mode rejects that seed), and the
    # variant with our Triton GEMM in its place passes in strict mode.
    spec = resolve_spec("gemm_bias_relu", platform)
    ctx = seed_context(spec, platform)
    by_variant = {c.metadata["own_kernels"]: c for c in CompilerSeedOperator().propose(ctx)}
    assert by_variant[False].metadata["library_calls"] == ["torch.addmm"]
    assert "_matmul(" in by_variant[True].source and "torch.addmm" not in by_variant[True].source
    kept = cpu_evaluator.submit(EvalRequest(by_variant[False], spec, platform.name, settings)).result()
    assert kept.status is Status.REJECTED_STATIC and kept.error_name == "torch_compute_op"
    own = cpu_evaluator.submit(EvalRequest(by_variant[True], spec, platform.name, settings)).result()
    assert own.status is Status.OK, own.feedback


def test_a_bare_library_call_gets_only_our_own_kernel() -> None:
    platform = load_platform("cpu")
    spec = resolve_spec("batched_gemm", platform)  # a bare bmm: Inductor calls the library only
    ctx = seed_context(spec, platform)
    (seed,) = CompilerSeedOperator().propose(ctx)
    assert seed.metadata["own_kernels"] and seed.metadata["kernels"] == 0 and "_matmul(" in seed.source
    assert not check_source(seed.source, "triton", True)


TENSOR_MATRIX_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(2, 8, 16), torch.randn(16, 12)]


def get_init_inputs():
    return []
"""


def test_a_reshaped_output_view_is_not_taken_for_a_view_of_an_input() -> None:
    """KernelBench L1/10: Inductor views the input as a matrix and the result back as 3-D (both through
    `reinterpret_tensor`); the seed returns a view of its own buffer, which strict mode accepts."""
    platform = load_platform("cpu")
    spec = KernelSpec("tensor_matrix", TENSOR_MATRIX_REFERENCE, shapes=(ShapeCase("default"),))
    (seed,) = CompilerSeedOperator().propose(seed_context(spec, platform))
    assert ".as_strided(" in seed.source and "_view(arg" not in seed.source
    assert check_source(seed.source, "triton", True) == []


@pytest.mark.gpu
def test_compiler_seeds_on_a_gpu() -> None:
    """Inductor's CUDA code (libdevice kept) for a reduction and a GEMM epilogue, verified on the GPU."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelevolve.eval.local import LocalEvaluator

    platform = load_platform(gpu_platform_name())
    settings = EvalSettings(
        correctness_trials=3, timing_trials=20, warmup_trials=3, measure_compile_baseline=False
    )
    with LocalEvaluator(platform, settings) as evaluator:
        for spec_name in ("softmax", "gemm_bias_relu"):
            spec = resolve_spec(spec_name, platform)
            ctx = seed_context(spec, platform)
            seeds = CompilerSeedOperator().propose(ctx)
            strict = [c for c in seeds if not c.metadata["library_calls"]]
            assert strict, spec_name
            report = evaluator.submit(EvalRequest(strict[0], spec, platform.name, settings)).result()
            assert report.status is Status.OK, f"{spec_name}: {report.feedback}"


CONV_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = MODULE

    def forward(self, x):
        return torch.relu(self.conv(x)) * 2.0


def get_inputs():
    return [torch.randn(SHAPE)]


def get_init_inputs():
    return []
"""
CONV_CASES = {  # name -> (module, input shape): strides, padding, dilation, groups, transposed, 1-3 dims
    "conv2d_grouped": ("nn.Conv2d(4, 6, kernel_size=3, stride=2, padding=1, groups=2)", "2, 4, 9, 11"),
    "conv_transpose2d": (
        "nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)",
        "2, 4, 5, 6",
    ),
    "conv3d": ("nn.Conv3d(3, 4, 3, stride=(1, 2, 1), padding=1)", "1, 3, 5, 6, 7"),
    "conv1d": ("nn.Conv1d(3, 5, 4, stride=2, dilation=2)", "2, 3, 20"),
    "conv_transpose3d": (
        "nn.ConvTranspose3d(2, 3, (2, 3, 3), stride=(2, 1, 2), padding=(0, 1, 1))",
        "1, 2, 3, 4, 5",
    ),
    "conv_transpose1d": (
        "nn.ConvTranspose1d(4, 2, 5, stride=3, padding=2, dilation=2, bias=False)",
        "2, 4, 7",
    ),
    # depthwise (one input channel per group) takes the direct kernel: KernelBench L1/83's asymmetric
    # kernel, and a channel multiplier of 2 with stride and dilation
    "depthwise2d": ("nn.Conv2d(3, 3, kernel_size=(3, 1), padding=(1, 0), groups=3)", "2, 3, 9, 11"),
    "depthwise2d_multiplier": (
        "nn.Conv2d(3, 6, 3, stride=2, padding=2, dilation=2, groups=3)",
        "1, 3, 10, 7",
    ),
}


def test_own_convolution_replaces_the_library_call(cpu_evaluator: LocalEvaluator) -> None:
    """Convolutions with an epilogue: our implicit-GEMM kernel passes strict mode for every kind, with
    the seed's K loop ("auto") and with both loops the tuner can pick (CONV_LOOP)."""
    import dataclasses

    platform = load_platform("cpu")
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1)
    for name, (module, shape) in CONV_CASES.items():
        source = CONV_REFERENCE.replace("MODULE", module).replace("SHAPE", shape)
        # eval mode: the batch norm reads its running statistics and changes no state
        spec = KernelSpec(name=name, reference_source=source, atol=1e-4, rtol=1e-4, mode="eval")
        ctx = seed_context(spec, platform)
        by_variant = {c.metadata["own_kernels"]: c for c in CompilerSeedOperator().propose(ctx)}
        assert by_variant[False].metadata["library_calls"] == ["torch.convolution"], name
        own = by_variant[True]
        assert "_conv(" in own.source and "torch.convolution" not in own.source
        assert not check_source(own.source, "triton", True)
        assert {t.name: t.value for t in find_tunables(own.source)}["CONV_LOOP"] == "auto"
        # both loops too, but for depthwise cases (the direct kernel has no K loop)
        other = [] if "depthwise" in name else ["taps", "fused"]
        for candidate in [
            own,
            *(dataclasses.replace(own, source=apply_values(own.source, {"CONV_LOOP": v})) for v in other),
        ]:
            report = cpu_evaluator.submit(EvalRequest(candidate, spec, platform.name, settings)).result()
            assert report.status is Status.OK, f"{name}: {report.feedback}"


# Inputs Dynamo leaves out of the graph, so Inductor's `call` takes fewer arguments than
# [*parameters, *buffers, *inputs]: state forward never reads (KernelBench L2/52's BatchNorm
# num_batches_tracked, L2/26's unused bias) and a Python scalar baked in as a constant (L1/5).
UNUSED_STATE_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.bias = nn.Parameter(torch.randn(4))  # never read by forward

    def forward(self, x):
        return self.bn(torch.relu(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return []
"""
SCALAR_INPUT_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return A * s


M = 64
N = 96


def get_inputs():
    return [torch.rand(M, N), 3.14]


def get_init_inputs():
    return []
"""


def test_capture_records_the_inputs_dynamo_keeps() -> None:
    from kernelevolve.variation.compiler.capture import capture

    spec = KernelSpec(name="unused_state", reference_source=UNUSED_STATE_REFERENCE, mode="eval")
    captured = capture(spec, spec.shapes[0], "cpu")
    unused = {captured.state_names.index("bias"), captured.state_names.index("bn.num_batches_tracked")}
    flat = len(captured.state_names) + captured.input_count
    assert set(captured.graph_inputs) == set(range(flat)) - unused and not captured.constants
    assert len(parse(captured.code).arg_names) == len(captured.graph_inputs)

    spec = KernelSpec(name="scalar_input", reference_source=SCALAR_INPUT_REFERENCE)
    captured = capture(spec, spec.shapes[0], "cpu")
    assert captured.graph_inputs == (0,) and captured.constants == ((1, 3.14),)


def test_seeds_pass_only_the_inputs_dynamo_keeps(cpu_evaluator: LocalEvaluator) -> None:
    """Through the harness in strict mode: before, `call` failed unpacking the arguments it never took."""
    platform = load_platform("cpu")
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1, strict=True)
    for name, source in (
        ("unused_state", UNUSED_STATE_REFERENCE),
        ("scalar_input", SCALAR_INPUT_REFERENCE),
    ):
        # eval mode: the batch norm reads its running statistics and changes no state
        spec = KernelSpec(name=name, reference_source=source, atol=1e-4, rtol=1e-4, mode="eval")
        seeds = CompilerSeedOperator().propose(seed_context(spec, platform))
        strict = next(c for c in seeds if not c.metadata["library_calls"])
        assert "args = [args[i] for i in" in strict.source, name
        if name == "scalar_input":  # another scalar would need another program
            assert "repr(inputs[1]) == '3.14'" in strict.source
        assert not check_source(strict.source, "triton", True), name
        report = cpu_evaluator.submit(EvalRequest(strict, spec, platform.name, settings)).result()
        assert report.status is Status.OK, f"{name}: {report.feedback}"


def test_library_ops_are_recorded_in_every_spelling() -> None:
    """Inductor writes fallback ops as `aten.x` or in full (`torch.ops.aten.x`, other namespaces)."""
    code = (
        "def call(self, args):\n"
        "    arg0_1, arg1_1, arg2_1 = args\n"
        "    args.clear()\n"
        "    buf0 = torch.ops.aten._scaled_dot_product_efficient_attention.default("
        "arg0_1, arg1_1, arg2_1, None, False)\n"
        "    buf1 = buf0[0]\n"
        "    buf2 = aten.view.dtype(buf1, torch.float32)\n"
        "    buf3 = torch.ops.higher_order.flex_attention(buf2, arg1_1, arg2_1)\n"
        "    return (buf3,)\n"
    )
    assert parse(code).library_calls == (
        "torch.ops.aten._scaled_dot_product_efficient_attention.default",
        "torch.ops.aten.view.dtype",
        "torch.ops.higher_order.flex_attention",
    )


def test_gpu_convolutions_also_get_seeds_in_the_reference_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU, Inductor wraps convolutions in channels-last conversions; a second capture with its
    layout optimisation off gives seeds in the reference's own layout. (Captured here on the CPU, where
    the option changes nothing, with the operator told it runs on a GPU.)"""
    import dataclasses

    from kernelevolve.variation.compiler import capture as capture_module

    layouts: list[bool] = []
    real_capture = capture_module.capture

    def on_the_cpu(
        spec: KernelSpec,
        shape: object,
        device: str,
        settings: capture_module.CaptureSettings = capture_module.INDUCTORS_OWN,
        config: object = None,
    ) -> object:
        layouts.append(settings.layout_optimization)
        return real_capture(spec, shape, "cpu", settings, config)  # type: ignore[arg-type]

    monkeypatch.setattr(capture_module, "capture", on_the_cpu)
    module, shape = CONV_CASES["conv2d_grouped"]
    spec = KernelSpec(
        name="conv", reference_source=CONV_REFERENCE.replace("MODULE", module).replace("SHAPE", shape)
    )
    gpu = dataclasses.replace(load_platform("cpu"), device="cuda")
    seeds = CompilerSeedOperator().propose(seed_context(spec, gpu))
    assert layouts == [True, False]

    def kinds(candidates: list[Candidate]) -> list[tuple[object, ...]]:
        return [
            (
                c.metadata["own_kernels"],
                c.metadata.get("layout_optimization", True),
                c.metadata.get("fp32_precision"),
            )
            for c in candidates
        ]

    # our own convolution also comes as tensor-core twins (3xBF16, 3xTF32): exact fp32 runs at FFMA rate;
    # Inductor's program with cuDNN's convolution as a TF32+BF16 twin (library_conv.py), ahead of all,
    # then in one TF32 pass over tripled channels (in Inductor's layout only).
    # In order of promise, layouts interleaved: a level-3 search has time for two or three seeds.
    assert kinds(seeds) == [
        (False, True, "tf32_bf16"),
        (False, False, "tf32_bf16"),
        (False, True, "tf32x3_one_pass"),
        (False, True, None),
        (False, False, None),
        (True, True, "bf16x3"),
        (True, False, "bf16x3"),
        (True, True, "tf32x3"),
        (True, False, "tf32x3"),
        (True, True, None),
        (True, False, None),
    ]
    # strict runs would reject the library's convolution statically: no evaluation is spent on it
    strict_seeds = CompilerSeedOperator(strict=True).propose(seed_context(spec, gpu))
    assert kinds(strict_seeds) == kinds(seeds)[5:]
    layouts.clear()
    library_twin = seeds[0]
    library_values = {t.name: t.value for t in find_tunables(library_twin.source)}
    # the split twins start with cuDNN's algorithm timing on; the plain call keeps PyTorch's default
    assert library_values["LIBRARY_CONV_FP32_PRECISION"] == "tf32_bf16"
    timing = {
        (
            c.metadata.get("fp32_precision"),
            {t.name: t.value for t in find_tunables(c.source)}["LIBRARY_CONV_BENCHMARK"],
        )
        for c in seeds
        if not c.metadata["own_kernels"]
    }
    # pairs, so a twin of either layout left untimed would show as its own entry
    assert timing == {("tf32_bf16", True), ("tf32x3_one_pass", True), (None, False)}
    assert not check_source(library_twin.source, "triton", False)
    twin = next(c for c in seeds if c.metadata["own_kernels"] and c.metadata.get("fp32_precision"))
    assert {t.name: t.value for t in find_tunables(twin.source)}["CONV_FP32_PRECISION"] == "bf16x3"
    assert not check_source(twin.source, "triton", True)
    cpu_seeds = CompilerSeedOperator().propose(seed_context(spec, load_platform("cpu")))
    assert all("layout_optimization" not in c.metadata for c in cpu_seeds) and layouts == [True]


def test_capture_keeps_nothing_of_the_reference_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamo keeps compiled callables past `reset()`: a capture must not leave the model or its inputs
    reachable from them (on a GPU those are KernelBench-sized tensors, held for the rest of a sweep)."""
    import weakref

    from kernelevolve.variation.compiler import capture as capture_module

    made: list[weakref.ref[Any]] = []  # the inputs (KernelBench L1: 6.4 GB each on a GPU), then the model
    make_inputs, build_model = capture_module._example_inputs, capture_module.reference.build_model

    def noted_inputs(*args: Any, **kwargs: Any) -> Any:
        inputs = make_inputs(*args, **kwargs)
        made.extend(weakref.ref(t) for t in inputs)
        return inputs

    def noted_model(*args: Any, **kwargs: Any) -> Any:
        model = build_model(*args, **kwargs)
        made.append(weakref.ref(model))
        return model

    monkeypatch.setattr(capture_module, "_example_inputs", noted_inputs)
    monkeypatch.setattr(capture_module.reference, "build_model", noted_model)
    platform = load_platform("cpu")
    spec = resolve_spec("layernorm", platform)
    captured = capture_module.capture(spec, spec.shapes[0], "cpu")
    assert "def call(" in captured.code and len(made) >= 2
    gc.collect()  # the model sits in reference cycles; the seed operator collects after each capture
    assert [ref() for ref in made] == [None] * len(made)


@pytest.mark.parametrize(("override", "strict"), [("strict=true", True), ("strict=false", False)])
def test_the_run_tells_the_seed_operators_whether_it_is_strict(override: str, strict: bool) -> None:
    from kernelevolve.app import build_operators
    from tests.hydra_config import compose_run_config

    cfg = compose_run_config(["platform=cpu", "+spec=softmax", override])
    operators = {op.name: op for op in build_operators(cfg)}
    assert operators["compiler_seed"].strict is strict and operators["rewrite_seed"].strict is strict


def test_grids_indexed_in_int64_are_understood() -> None:
    """Past 2**31 elements Inductor writes `tl.program_id(k).to(tl.int64) * BLOCK` (L1/87's 2**31 outputs);
    before, such a kernel left the problem without any compiler seed."""
    code = (H200 / "L1_22_0.py").read_text()
    assert "xoffset = tl.program_id(0) * XBLOCK" in code
    wide = code.replace(
        "xoffset = tl.program_id(0) * XBLOCK", "xoffset = tl.program_id(0).to(tl.int64) * XBLOCK"
    )
    (kernel,) = parse(wide).kernels
    assert [(a.prefix, a.program_axis, a.block) for a in kernel.axes] == [("x", 0, "XBLOCK")]
    overflow = code.replace(
        "xoffset = tl.program_id(0) * XBLOCK",
        "xoffset = (tl.program_id(1).to(tl.int64) + tl.program_id(2).to(tl.int64) * tl.num_programs(1))"
        " * XBLOCK",
    )
    (kernel,) = parse(overflow).kernels
    assert [(a.program_axis, a.overflow_axis) for a in kernel.axes] == [(1, 2)]


WARNING_REFERENCE = """
import warnings
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm2d(64)  # fed one channel, as L2/28 does: it warns

    def forward(self, x, y):
        x = self.norm((x * 2.0).unsqueeze(1).unsqueeze(1)).squeeze(1).squeeze(1)
        warnings.warn("the reference warns here")
        return (x + y) * y


def get_inputs():
    return [torch.rand(8, 32), torch.rand(8, 32)]


def get_init_inputs():
    return []
"""

GRAPH_BREAK_REFERENCE = WARNING_REFERENCE.replace(
    'warnings.warn("the reference warns here")', "print(int(x.sum().item() > 0))"
)


def test_capture_takes_the_whole_graph_or_none(cpu_evaluator: LocalEvaluator) -> None:
    """A reference that warns is captured whole (the warning moved out of the graph); one with a real graph
    break is refused. Before, capture kept Inductor's first graph only: L2/28's seeds returned the Linear's
    output and were rejected as incorrect."""
    from kernelevolve.variation.compiler.capture import CaptureError, capture

    spec = KernelSpec(name="warns", reference_source=WARNING_REFERENCE, atol=1e-4, rtol=1e-4)
    program = parse(capture(spec, spec.shapes[0], "cpu").code)
    assert program.kernels and any(k.kind == "persistent_reduction" for k in program.kernels)
    platform = load_platform("cpu")
    settings = EvalSettings(correctness_trials=2, timing_trials=2, warmup_trials=1, strict=True)

    seeds = CompilerSeedOperator().propose(seed_context(spec, platform))
    assert seeds
    report = cpu_evaluator.submit(EvalRequest(seeds[0], spec, platform.name, settings)).result()
    assert report.status is Status.OK, report.feedback

    broken = KernelSpec(name="breaks", reference_source=GRAPH_BREAK_REFERENCE)
    with pytest.raises(CaptureError):
        capture(broken, broken.shapes[0], "cpu")


_REDUCTION_PROBE = """
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers
{helpers}

@triton.jit
def probe(x_ptr, ours_ptr, inductor_ptr, R: tl.constexpr, C: tl.constexpr, MAX: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    if MAX:
        ours = _ke_interp_max2(x, 1)
        inductor = triton_helpers.max2(x, 1)
    else:
        ours = _ke_interp_min2(x, 1)
        inductor = triton_helpers.min2(x, 1)
    tl.store(ours_ptr + tl.arange(0, R), ours)
    tl.store(inductor_ptr + tl.arange(0, R), inductor)
"""


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_interpreter_reductions_match_inductors_max2_and_min2(
    interpreter: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dtype: str
) -> None:
    """for_interpreter swaps Inductor's max2/min2 (a Python combine per element in the interpreter) for
    builtin reductions; the values, NaN propagation included, must be Inductor's."""
    import importlib
    import sys

    import torch

    from kernelevolve.variation.compiler.render import INTERPRETER_REDUCTIONS_SOURCE

    assert for_interpreter("a = triton_helpers.max2(t, 1) + triton_helpers.min2(t, 0)") == (
        "a = _ke_interp_max2(t, 1) + _ke_interp_min2(t, 0)"
    )
    (tmp_path / "reduction_probe.py").write_text(
        _REDUCTION_PROBE.format(helpers=INTERPRETER_REDUCTIONS_SOURCE)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("reduction_probe")
    try:
        x = (torch.randn(4, 8) * 100).to(getattr(torch, dtype))
        if dtype == "float32":
            x[1, 3] = float("nan")
            x[2, 0] = float("nan")
        for is_max in (True, False):
            ours, inductor = torch.empty(4, dtype=x.dtype), torch.empty(4, dtype=x.dtype)
            module.probe[(1,)](x, ours, inductor, R=4, C=8, MAX=is_max)
            expected = x.amax(1) if is_max else x.amin(1)
            assert torch.equal(ours.nan_to_num(7.0), inductor.nan_to_num(7.0))
            assert torch.equal(ours.nan_to_num(7.0), expected.nan_to_num(7.0))
    finally:
        sys.modules.pop("reduction_probe", None)


def test_a_library_calling_seed_runs_through_with_its_device_work_faked(
    interpreter: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The precompile pass of a permissive seed that keeps torch.addmm: with PyTorch's work faked (the CPU
    playing the device) and its kernels' launches suppressed, as on a GPU, the program runs to the end with
    the output's shape, and the GEMM reaches the dispatcher only on meta tensors: nothing of it ran."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from triton.runtime.interpreter import InterpretedFunction

    launches: list[str] = []
    monkeypatch.setattr(InterpretedFunction, "run", lambda self, *a, **k: launches.append(self.fn.__name__))

    from kernelevolve.backends.triton import TritonBackend
    from kernelevolve.eval.precompile import device_work_faked
    from kernelevolve.specs import reference

    platform = load_platform("cpu")
    spec = resolve_spec("gemm_bias_relu", platform)
    seed = next(
        c
        for c in CompilerSeedOperator().propose(seed_context(spec, platform))
        if not c.metadata["own_kernels"]
    )
    module = TritonBackend().load(seed.source, "faked_library_seed")
    ref = reference.load_reference(spec.reference_source)
    reference.apply_shape(ref, spec.shapes[0])
    dtype = reference.torch_dtype(spec.dtype)
    inputs = reference.make_inputs(ref, 0, "cpu", dtype)
    gemms: list[str] = []

    class SeeGemms(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func._schema.name in ("aten::addmm", "aten::mm"):
                gemms.extend(str(a.device) for a in args if isinstance(a, torch.Tensor))
            return func(*args, **(kwargs or {}))

    with SeeGemms(), device_work_faked(("cpu",)), torch.no_grad():
        model = reference.build_model(module.ModelNew, ref, 0, "cpu", dtype)
        got = model(*inputs)
    with torch.no_grad():
        expected = reference.build_model(ref.Model, ref, 0, "cpu", dtype)(*inputs)
    assert got.shape == expected.shape
    assert gemms and set(gemms) == {"meta"}
    assert launches  # the seed's own kernels were reached (on a GPU: compiled, not run)
