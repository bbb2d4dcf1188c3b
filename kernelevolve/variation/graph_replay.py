"""CUDA-graph replay: a correct candidate's forward, captured once per input layout and replayed.

Arity 1, permissive GPU runs only (strict mode rejects CUDA graphs statically). A candidate made of
many small kernels pays the host's launch cost on every one; replaying a captured graph pays it once.
The child is the parent's source with `ModelNew.forward` renamed `_eager_forward` and a new `forward`
that hands it to `_replay_forward` (appended to the module). That keeps the parent's tunables, so
`tune` keeps working on the child, and leaves `__init__` (and any `super(ModelNew, self)`) alone.

Fresh inputs on every call, as the harness's correctness trials check: the graph reads its own
static input buffers, refilled from the caller's tensors each call, and the caller gets a copy of the
graph's output (the next replay overwrites it). The first call at a layout runs eagerly (it compiles
and autotunes the parent's kernels, and the precompile pass, which suppresses Triton launches, never
gets further on its own instance); the second captures, so the graph that is timed is one the
correctness trials ran. Capture happens inside those trials, so whatever their checks make
`torch.empty` do (fill with NaN) is recorded into the graph too: a cost the candidate carries.
"""

from __future__ import annotations

import ast
import logging
from typing import TYPE_CHECKING

from kernelevolve.search.interfaces import ParentSet, ProposalContext
from kernelevolve.types import Candidate, EvalReport

if TYPE_CHECKING:
    from kernelevolve.search.graph import Node, SearchGraph

log = logging.getLogger(__name__)

BACKENDS = ("triton",)  # CuTe's compiled launches have not been shown to capture
MARKER = "# kernelevolve: CUDA-graph replay of ModelNew.forward"
EAGER_FORWARD = "_eager_forward"
# Host calls that synchronise with the device cannot be captured: such a parent would only fail.
_UNCAPTURABLE = (".item()", ".cpu()", ".tolist()", ".numpy()", "synchronize(")
# The timer hides up to about 0.67 ms of host issue time behind a GPU wait (`timers.cover_for`), so a
# graph shortens what is measured where issuing takes longer than that, or where it is a large part of
# the call (`TimingStats.host_bound`: many short kernels, each with its own launch gap on the GPU too).
HOST_BOUND_MS = 0.5
# Follow-ups: a host-bound kernel within this factor of the best gets its replay before anything else.
# Replaying can shorten a call by more than the host's share suggests (experiments/sample_sweep_h200/run_04).
FOLLOW_UP_RANGE = 4.0

_REPLAY_HELPERS = f'''

{MARKER}
_GRAPH_LAYOUTS_KEPT = 4  # captured layouts per module; each keeps its own memory pool


def _graph_key(args):
    key = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            key.append((tuple(arg.shape), tuple(arg.stride()), arg.dtype, str(arg.device)))
        else:
            key.append(("value", repr(arg)))
    return tuple(key)


def _copy_out(value):
    """The graph's output as tensors of the caller's own (the next replay overwrites the graph's)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_copy_out(v) for v in value)
    return value


class _CapturedForward:
    """One layout's graph: static inputs refilled per call, the graph replayed, the output copied."""

    def __init__(self, eager_forward, args):
        self.static_args = [torch.empty_like(a) if isinstance(a, torch.Tensor) else a for a in args]
        for static, arg in zip(self.static_args, args):
            if isinstance(static, torch.Tensor):
                static.copy_(arg)
        torch.cuda.current_stream().synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = eager_forward(*self.static_args)

    def __call__(self, args):
        for static, arg in zip(self.static_args, args):
            if isinstance(static, torch.Tensor):
                static.copy_(arg)
        self.graph.replay()
        return _copy_out(self.static_out)


def _replay_forward(module, eager_forward, args):
    if not all(a.is_cuda for a in args if isinstance(a, torch.Tensor)) or not any(
        isinstance(a, torch.Tensor) for a in args
    ):
        return eager_forward(*args)
    layouts = module.__dict__.setdefault("_graph_layouts", {{}})
    key = _graph_key(args)
    entry = layouts.get(key)
    if entry is None:  # first call at this layout: compile and warm up eagerly
        if len(layouts) >= _GRAPH_LAYOUTS_KEPT:
            layouts.pop(next(iter(layouts)))
        layouts[key] = "warm"
        return eager_forward(*args)
    if entry == "warm":
        entry = layouts[key] = _CapturedForward(eager_forward, args)
    return entry(args)
'''


class GraphReplayError(ValueError):
    """The parent's source has no `ModelNew.forward` this rewrite can rename."""


def with_graph_replay(source: str) -> str:
    """The source with ModelNew's forward replayed from a CUDA graph (see the module docstring)."""
    tree = ast.parse(source)
    model_new = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None)
    if model_new is None or model_new.end_lineno is None:
        raise GraphReplayError("no top-level class ModelNew")
    forward = next(
        (n for n in model_new.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None
    )
    if forward is None:
        raise GraphReplayError("ModelNew has no forward method")
    if any(isinstance(n, ast.FunctionDef) and n.name == EAGER_FORWARD for n in model_new.body):
        raise GraphReplayError(f"ModelNew already defines {EAGER_FORWARD}")
    lines = source.splitlines()
    # The `def` keyword's line (decorators, if any, come before it).
    def_line = next(
        i for i in range(forward.lineno - 1, len(lines)) if lines[i].lstrip().startswith("def forward")
    )
    lines[def_line] = lines[def_line].replace("def forward", f"def {EAGER_FORWARD}", 1)
    indent = " " * forward.col_offset
    method = [
        "",
        f"{indent}def forward(self, *args):",
        f"{indent}    return _replay_forward(self, self.{EAGER_FORWARD}, args)",
    ]
    lines[model_new.end_lineno : model_new.end_lineno] = method
    rewritten = "\n".join(lines) + "\n" + _REPLAY_HELPERS
    ast.parse(rewritten)  # a rewrite that does not parse is a bug here, not a candidate fault
    return rewritten


def host_bound(report: EvalReport) -> bool:
    """At some shape, issuing a call takes long enough on the host for a graph to pay off."""
    return any(
        t.host_bound or (t.host_ms is not None and t.host_ms >= HOST_BOUND_MS)
        for t in report.latency.values()
    )


def is_graph_replayed(source: str) -> bool:
    return MARKER in source


class GraphReplayOperator:
    name = "graph_replay"
    arity = 1

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict
        # parent id -> its replayed child's id (None: not wrappable); a network's source takes a while
        # to parse, and the engine asks for follow-ups at every turn
        self._child_ids: dict[str, str | None] = {}

    def follow_up(self, graph: SearchGraph) -> ParentSet | None:
        """Where the best kernel is a replay of a compiler seed, that seed's twin in Inductor's other layout
        first; then the best host-bound kernel within FOLLOW_UP_RANGE of the best one whose replay is not in
        the graph yet (permissive GPU runs: only GPU timings say how long issuing took)."""
        best = graph.best()
        if self.strict or best is None or best.fitness is None:
            return None
        twin = self._layout_twin(graph, best)
        if twin is not None:
            return (twin.id,)
        floor = best.fitness.objective / FOLLOW_UP_RANGE
        for node in graph.top(len(graph.feasible())):
            if node.fitness is None or node.fitness.objective < floor:
                break
            if node.report is None or not _replayable(node.candidate, node.report):
                continue
            child_id = self._child_id(node.candidate)
            if child_id is not None and child_id not in graph:
                return (node.id,)
        return None

    def _layout_twin(self, graph: SearchGraph, best: Node) -> Node | None:
        """A host-bound seed's time is its host's issue time, which says little about its replay
        (experiments/sample_sweep_h200/run_08). So the winning replay's seed has its twin (the same capture
        settings, the other layout) replayed too, wherever it stands."""
        if not best.candidate.metadata.get("graph_replay") or not best.candidate.parent_ids:
            return None
        parent_id = best.candidate.parent_ids[0]
        if parent_id not in graph or graph.node(parent_id).candidate.operator != COMPILER_SEED:
            return None
        parent = graph.node(parent_id).candidate
        for node in graph.feasible():
            seed = node.candidate
            if (
                seed.operator == COMPILER_SEED
                and _in_layout(seed) != _in_layout(parent)
                and _capture_settings(seed) == _capture_settings(parent)
                and node.report is not None
                and _replayable(seed, node.report)
            ):
                child_id = self._child_id(seed)
                if child_id is not None and child_id not in graph:
                    return node
        return None

    def _child_id(self, parent: Candidate) -> str | None:
        if parent.id not in self._child_ids:
            try:
                self._child_ids[parent.id] = _replayed(parent).id
            except (GraphReplayError, SyntaxError):
                self._child_ids[parent.id] = None
        return self._child_ids[parent.id]

    def propose(self, ctx: ProposalContext) -> list[Candidate]:
        if self.strict or ctx.platform.device != "cuda" or len(ctx.parents) != 1:
            return []
        node = ctx.graph.node(ctx.parents[0])
        if node.report is None or not _replayable(node.candidate, node.report):
            return []
        try:
            child = _replayed(node.candidate)
        except (GraphReplayError, SyntaxError) as exc:
            log.debug("graph_replay: parent %s not wrapped: %s", node.candidate.id, exc)
            return []
        return [] if child.id in ctx.graph else [child]


COMPILER_SEED = "compiler_seed"


def _in_layout(seed: Candidate) -> bool:
    """Captured with Inductor's layout optimisation (recorded only where it was off)."""
    return seed.metadata.get("layout_optimization", True) is not False


def _capture_settings(seed: Candidate) -> tuple[object, ...]:
    """How a compiler seed was made, but for its layout: own kernels or library calls, the precision of
    its convolutions and GEMMs, attention as matmuls or not, Inductor's config patches."""
    meta = seed.metadata
    config = meta.get("inductor_config") or {}
    own, attention_as_matmuls = bool(meta.get("own_kernels")), bool(meta.get("attention_as_matmuls"))
    return own, meta.get("fp32_precision"), attention_as_matmuls, repr(sorted(config.items()))


def _replayable(parent: Candidate, report: EvalReport) -> bool:
    """A correct, host-bound Triton kernel, not replayed yet, that makes no call a capture cannot hold."""
    if not report.ok or parent.backend not in BACKENDS or is_graph_replayed(parent.source):
        return False
    return not any(s in parent.source for s in _UNCAPTURABLE) and host_bound(report)


def _replayed(parent: Candidate) -> Candidate:
    """The parent's replayed child (raises GraphReplayError where its source cannot be wrapped)."""
    return Candidate(
        source=with_graph_replay(parent.source),
        backend=parent.backend,
        operator=GraphReplayOperator.name,
        mode="graph_replay",
        parent_ids=(parent.id,),
        metadata={**parent.metadata, "graph_replay": True},
    )
