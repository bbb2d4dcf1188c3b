"""Template families of several ops (norms, gated activations, GEMMs with an epilogue, attention written out),
recognised by walking a traced program back from its output.

One computation reaches the dispatcher as different op lists: `x * rsqrt(m + eps) * w`, `w * (x / sqrt(m +
eps))` and `F.rms_norm(x, (d,), w, eps)`. The walk follows each operand through ops that keep its values
(dtype casts, detach, views that keep the dims the family computes over), reads a product as the multiset of
its factors, and checks the template's contract: the constructor arguments its ModelNew takes and the state
it holds (names, shapes and order, so it takes the reference's weights and draws the same initial values).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelevolve.specs.traced_families import TracedOp, TracedProgram

# Ops whose output holds the values of their one tensor operand.
_SAME_VALUES = frozenset(
    {
        "view.default",
        "_unsafe_view.default",
        "reshape.default",
        "expand.default",
        "alias.default",
        "detach.default",
        "clone.default",
        "contiguous.default",
        "_to_copy.default",  # a dtype cast: the templates compute in fp32 whatever the input's dtype
        "lift_fresh.default",
    }
)


class _Walk:
    """Reads a traced program backwards: what produced a value, through what keeps its values."""

    def __init__(self, program: TracedProgram) -> None:
        self.program = program

    def producer(self, source: str) -> TracedOp | None:
        if not source.startswith("op"):
            return None
        return self.program.ops[int(source[2:].split("[")[0])]

    def shape(self, source: str) -> tuple[int, ...] | None:
        if source.startswith("in"):
            return self.program.input_shapes[int(source[2:])]
        if source.startswith("state:"):
            return dict(self.program.state).get(source.removeprefix("state:"))
        op = self.producer(source)
        if op is None or not op.shapes:
            return None
        index = int(source.split("[")[1].rstrip("]")) if "[" in source else 0
        return op.shapes[index] if index < len(op.shapes) else None

    def base(self, source: str, trailing: int | None = None) -> str:
        """`source` followed back through ops that keep its values and its shape, or with `trailing` its
        last `trailing` dims (a batched matmul's batch dims, a linear layer's rows, flattened or split)."""
        while True:
            op = self.producer(source)
            if op is None or "[" in source or op.name not in _SAME_VALUES or len(op.sources) != 1:
                return source
            before, after = self.shape(op.sources[0]), self.shape(source)
            if before is None or after is None or math.prod(before) != math.prod(after):
                return source  # a broadcast repeats values
            kept = before == after if trailing is None else before[-trailing:] == after[-trailing:]
            if not kept:
                return source
            source = op.sources[0]

    def op(self, source: str, *names: str, trailing: int | None = None) -> TracedOp | None:
        """The op that produced `source`'s values, where it is one of `names`."""
        op = self.producer(self.base(source, trailing))
        return op if op is not None and op.name in names else None

    def factors(self, source: str) -> list[tuple[str, int]]:
        """A product of tensors as (factor, +1 or -1 for a divisor), each factor followed to its base."""
        source = self.base(source)
        op = self.producer(source)
        if op is not None and op.name in ("mul.Tensor", "div.Tensor") and len(op.sources) == 2:
            if op.name == "div.Tensor" and op.arguments.get("rounding_mode") is not None:
                return [(source, 1)]
            right = self.factors(op.sources[1])
            sign = -1 if op.name == "div.Tensor" else 1
            return self.factors(op.sources[0]) + [(s, sign * e) for s, e in right]
        return [(source, 1)]


def _ints(values: tuple[Any, ...], count: int) -> bool:
    return len(values) == count and all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _last(dims: Any, rank: int) -> bool:
    """`dims` names the last dim of a rank-`rank` tensor, as -1 or rank - 1, alone or in a list."""
    if isinstance(dims, list):
        return len(dims) == 1 and _last(dims[0], rank)
    return isinstance(dims, int) and rank > 0 and dims % rank == rank - 1


def _scalar_added(op: TracedOp | None) -> float | None:
    """The number `op` adds to its one tensor operand (x + eps), or None."""
    if op is None or op.name not in ("add.Tensor", "add.Scalar", "add_.Scalar", "add_.Tensor"):
        return None
    other = op.arguments.get("other")
    if len(op.sources) != 1 or op.arguments.get("alpha", 1) != 1 or not isinstance(other, (int, float)):
        return None
    return float(other)


def rmsnorm(program: TracedProgram) -> bool:
    """x * rsqrt(mean(x^2, last dim) + eps) * weight: the templates' ModelNew(dim, eps=1e-6) with a `weight`
    of (dim,)."""
    shape = program.input_shapes[0] if program.input_shapes else None
    if shape is None or not program.init or not _ints(program.init[:1], 1) or len(program.init) > 2:
        return False
    dim, eps = program.init[0], (program.init[1] if len(program.init) == 2 else 1e-6)
    if shape[-1:] != (dim,) or program.state != (("weight", (dim,)),) or not isinstance(eps, (int, float)):
        return False
    walk = _Walk(program)
    factors = walk.factors(program.output)
    roots = [(s, e) for s, e in factors if s not in ("in0", "state:weight")]
    if sorted(factors) != sorted([("in0", 1), ("state:weight", 1), *roots]) or len(roots) != 1:
        return False
    source, exponent = roots[0]
    root = walk.op(source, "rsqrt.default" if exponent == 1 else "sqrt.default")
    shifted = walk.op(root.sources[0], "add.Tensor", "add.Scalar", "add_.Scalar") if root else None
    added = _scalar_added(shifted)
    if shifted is None or added is None or not math.isclose(added, eps, rel_tol=1e-5):
        return False
    mean = walk.op(shifted.sources[0], "mean.dim")
    if (
        mean is None
        or not _last(mean.arguments.get("dim"), len(shape))
        or mean.arguments.get("keepdim") is not True
    ):
        return False
    if mean.arguments.get("dtype") is not None:
        return False
    square = walk.op(mean.sources[0], "pow.Tensor_Scalar", "mul.Tensor")
    if square is None:
        return False
    if square.name == "pow.Tensor_Scalar":
        return walk.base(square.sources[0]) == "in0" and square.arguments.get("exponent") == 2
    return [walk.base(s) for s in square.sources] == ["in0", "in0"]


def _half(walk: _Walk, source: str, size: int, rank: int) -> int | None:
    """Which half (0, 1) of the forward's first input along its last dim `source` is, or None."""
    op = walk.producer(source)
    if op is None or op.sources != ("in0",):
        return None
    if op.name in ("split.Tensor", "split_with_sizes.default") and "[" in source:
        sizes = op.arguments.get("split_size", op.arguments.get("split_sizes"))
        if sizes not in (size // 2, [size // 2, size // 2]) or not _last(op.arguments.get("dim"), rank):
            return None
        index = int(source.split("[")[1].rstrip("]"))
        return index if index in (0, 1) else None
    if op.name == "slice.Tensor" and _last(op.arguments.get("dim"), rank) and op.arguments.get("step") == 1:
        bounds = (op.arguments.get("start"), op.arguments.get("end"))
        if bounds == (0, size // 2):
            return 0
        if bounds[0] == size // 2 and isinstance(bounds[1], int) and bounds[1] >= size:
            return 1
    return None


def swiglu(program: TracedProgram) -> bool:
    """silu(gate) * up over the two halves [gate | up] of the last dim: the template's ModelNew()."""
    shape = program.input_shapes[0] if program.input_shapes else None
    if shape is None or not shape or shape[-1] % 2 or program.init or program.state:
        return False
    walk = _Walk(program)
    factors = walk.factors(program.output)
    if any(e != 1 for _, e in factors):
        return False

    def half(source: str) -> int | None:
        return _half(walk, walk.base(source), shape[-1], len(shape))

    halves = [half(s) for s, _ in factors]
    gates = [walk.op(s, "silu.default", "sigmoid.default") for s, _ in factors]
    if len(factors) == 2:  # silu(gate) * up
        silu = [g for g in gates if g is not None and g.name == "silu.default"]
        return halves.count(1) == 1 and len(silu) == 1 and half(silu[0].sources[0]) == 0
    if len(factors) == 3:  # gate * sigmoid(gate) * up
        sigmoid = [g for g in gates if g is not None and g.name == "sigmoid.default"]
        return (
            sorted(h for h in halves if h is not None) == [0, 1]
            and len(sigmoid) == 1
            and half(sigmoid[0].sources[0]) == 0
        )
    return False


def layernorm(program: TracedProgram) -> bool:
    """nn.LayerNorm(normalized_shape) held as `ln`, at its default eps: the templates' ModelNew."""
    if len(program.init) != 1:
        return False
    given = program.init[0]
    normalized = (
        [given] if isinstance(given, int) else list(given) if isinstance(given, (list, tuple)) else []
    )
    if not normalized or not _ints(tuple(normalized), len(normalized)):
        return False
    held = (("ln.weight", tuple(normalized)), ("ln.bias", tuple(normalized)))
    walk = _Walk(program)
    op = walk.op(program.output, "native_layer_norm.default")
    if program.state != held or op is None or not walk.base(program.output).endswith("[0]"):
        return False
    sources = (walk.base(op.sources[0]), *op.sources[1:])
    eps = op.arguments.get("eps")
    return (
        sources == ("in0", "state:ln.weight", "state:ln.bias")
        and op.arguments.get("normalized_shape") == normalized
        and isinstance(eps, float)
        and math.isclose(eps, 1e-5, rel_tol=1e-5)
    )


def log_softmax(program: TracedProgram) -> bool:
    """log_softmax over one dim: the templates' ModelNew(dim=1), from the constructor's dim or none."""
    shape = program.input_shapes[0] if program.input_shapes else None
    walk = _Walk(program)
    op = walk.op(program.output, "_log_softmax.default")
    if shape is None or len(shape) < 2 or op is None or program.state or walk.base(op.sources[0]) != "in0":
        return False
    dim = op.arguments.get("dim")
    if not isinstance(dim, int) or op.arguments.get("half_to_float") is not False:
        return False
    if not program.init:
        return dim % len(shape) == 1
    return _ints(program.init, 1) and program.init[0] % len(shape) == dim % len(shape)


def batched_gemm(program: TracedProgram) -> bool:
    """bmm of a (b, m, k) and a (b, k, n) input: the templates' ModelNew()."""
    a, b = (program.input_shapes + (None, None))[:2]
    if a is None or b is None or len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
        return False
    walk = _Walk(program)
    op = walk.op(program.output, "bmm.default", trailing=2)
    if op is None or program.init or program.state:
        return False
    return tuple(walk.base(s, trailing=2) for s in op.sources) == ("in0", "in1")


def _transposed(walk: _Walk, source: str, of: str, rank: int) -> bool:
    """`source` is input `of` with its last two dims swapped."""
    op = walk.op(source, "transpose.int", "permute.default", "t.default", trailing=2)
    if op is None or op.sources != (of,):
        return False
    if op.name == "t.default":
        return rank == 2
    if op.name == "transpose.int":
        return sorted(d % rank for d in (op.arguments["dim0"], op.arguments["dim1"])) == [rank - 2, rank - 1]
    order = [d % rank for d in op.arguments.get("dims", [])]
    return order == [*range(rank - 2), rank - 1, rank - 2]


def gemm_bias_relu(program: TracedProgram) -> bool:
    """relu(x @ W^T + b) with nn.Linear(in_features, out_features) held as `linear`: the templates'
    ModelNew(in_features, out_features)."""
    shape = program.input_shapes[0] if program.input_shapes else None
    if shape is None or not _ints(program.init, 2):
        return False
    k, n = program.init
    if shape[-1:] != (k,) or program.state != (("linear.weight", (n, k)), ("linear.bias", (n,))):
        return False
    walk = _Walk(program)
    relu = walk.op(program.output, "relu.default", "clamp.default", "clamp_min.default")
    if relu is None:
        return False
    if relu.name != "relu.default":
        low = relu.arguments.get("min")
        if low != 0 or relu.arguments.get("max") is not None:
            return False
    linear = walk.op(relu.sources[0], "addmm.default", "add.Tensor", trailing=1)
    if linear is None or linear.arguments.get("alpha", 1) != 1 or linear.arguments.get("beta", 1) != 1:
        return False
    if linear.name == "addmm.default":
        bias, x, weight = linear.sources
    else:
        product = [s for s in linear.sources if walk.op(s, "mm.default", trailing=1)]
        if len(product) != 1 or len(linear.sources) != 2:
            return False
        bias = next(s for s in linear.sources if s != product[0])
        mm = walk.op(product[0], "mm.default", trailing=1)
        assert mm is not None
        x, weight = mm.sources
    return (
        bias == "state:linear.bias"
        and walk.base(x, trailing=1) == "in0"
        and _transposed(walk, weight, "state:linear.weight", 2)
    )


def elementwise_chain(program: TracedProgram) -> bool:
    """gelu(x * scale + bias) * sigmoid(x) (exact GELU) with `scale` and `bias` of (dim,), created in that
    order: the templates' ModelNew(dim)."""
    shape = program.input_shapes[0] if program.input_shapes else None
    if shape is None or not _ints(program.init, 1):
        return False
    dim = program.init[0]
    if shape[-1:] != (dim,) or program.state != (("scale", (dim,)), ("bias", (dim,))):
        return False
    walk = _Walk(program)
    factors = walk.factors(program.output)
    if len(factors) != 2 or any(e != 1 for _, e in factors):
        return False
    sigmoid = [walk.op(s, "sigmoid.default") for s, _ in factors]
    gelu = [walk.op(s, "gelu.default") for s, _ in factors]
    pair = [(g, s) for g, s in zip(gelu, reversed(sigmoid), strict=True) if g is not None and s is not None]
    if len(pair) != 1 or walk.base(pair[0][1].sources[0]) != "in0":
        return False
    g = pair[0][0]
    shifted = walk.op(g.sources[0], "add.Tensor")
    if g.arguments.get("approximate") != "none" or shifted is None or shifted.arguments.get("alpha", 1) != 1:
        return False
    if len(shifted.sources) != 2 or "state:bias" not in shifted.sources:
        return False
    scaled = walk.op(next(s for s in shifted.sources if s != "state:bias"), "mul.Tensor")
    return scaled is not None and sorted(walk.base(s) for s in scaled.sources) == ["in0", "state:scale"]


def embedding_bag_sum(program: TracedProgram) -> bool:
    """nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum", include_last_offset=True) held as `bag`,
    called on (indices, offsets): the template's ModelNew(num_embeddings, embedding_dim)."""
    return _embedding_bag(program, mode=0)


def embedding_bag_mean(program: TracedProgram) -> bool:
    """The same in mode="mean": the template's variant."""
    return _embedding_bag(program, mode=1)


def embedding_bag_weighted(program: TracedProgram) -> bool:
    """F.embedding_bag in mode="sum" with per-sample weights (the third input) over the module's own
    `weight` table: the template's ModelNew(num_embeddings, embedding_dim)."""
    return _embedding_bag(program, mode=0, table="weight", inputs=("in0", "in1", "in2"))


def _embedding_bag(
    program: TracedProgram, mode: int, table: str = "bag.weight", inputs: tuple[str, ...] = ("in0", "in1")
) -> bool:
    if not _ints(program.init, 2) or program.state != ((table, tuple(program.init)),):
        return False
    walk = _Walk(program)
    source = walk.base(program.output)
    op = walk.op(source, "_embedding_bag.default", "_embedding_bag_forward_only.default")
    if op is None or not source.endswith("[0]"):
        return False
    arguments = op.arguments
    return (
        tuple(walk.base(s) for s in op.sources) == (f"state:{table}", *inputs)
        and arguments.get("mode") == mode
        and arguments.get("include_last_offset") is True
        and arguments.get("per_sample_weights") is None
        and arguments.get("padding_idx") in (None, -1)
        and not arguments.get("scale_grad_by_freq")
    )


def dot_interaction(program: TracedProgram) -> bool:
    """The strict upper triangle, row by row, of each sample's Gram matrix of its (F, D) features: the
    templates' ModelNew()."""
    shape = program.input_shapes[0] if program.input_shapes else None
    if shape is None or len(shape) != 3 or program.init or program.state:
        return False
    walk = _Walk(program)
    index = walk.op(program.output, "index.Tensor")
    if index is None or len(index.sources) != 3:
        return False
    gram = walk.op(index.sources[0], "bmm.default", trailing=2)
    if gram is None or walk.base(gram.sources[0], trailing=2) != "in0":
        return False
    if not _transposed(walk, gram.sources[1], "in0", 3):
        return False
    positions = index.arguments.get("indices")
    if not isinstance(positions, list) or len(positions) != 3 or positions[0] is not None:
        return False
    made = [_triangle_row(walk, s, shape[1]) for s in positions[1:]]
    return made[0] is not None and made == [(0, made[0][1]), (1, made[0][1])]


def _triangle_row(walk: _Walk, source: str, size: int) -> tuple[int, str] | None:
    """(which row of triu_indices(size, size, offset=1), that op's output) `source` is, or None."""
    base = walk.base(source)
    op = walk.producer(base)
    if op is None or len(op.sources) != 1:
        return None
    if op.name == "unbind.int" and op.arguments.get("dim") == 0 and "[" in base:
        row = int(base.split("[")[1].rstrip("]"))
    elif (
        op.name == "select.int"
        and op.arguments.get("dim") == 0
        and isinstance(op.arguments.get("index"), int)
    ):
        row = op.arguments["index"]
    else:
        return None
    indices = walk.base(op.sources[0])
    made = walk.op(indices, "triu_indices.default")
    if made is None or (
        made.arguments.get("row"),
        made.arguments.get("col"),
        made.arguments.get("offset"),
    ) != (
        size,
        size,
        1,
    ):
        return None
    return row, indices


def attention(program: TracedProgram) -> bool:
    """softmax(q @ k^T * scale, last dim) @ v written out, over (batch, heads, seq, head_dim) inputs, with
    the scale the templates' ModelNew(scale=None) takes: 1/sqrt(head_dim), or the constructor's."""
    shapes = program.input_shapes
    if len(shapes) != 3 or any(s is None or len(s) != 4 for s in shapes) or program.state:
        return False
    q = shapes[0]
    assert q is not None
    if len(program.init) > 1 or (program.init and not isinstance(program.init[0], float)):
        return False
    expected = program.init[0] if program.init else 1 / math.sqrt(q[-1])
    walk = _Walk(program)
    out = walk.op(program.output, "bmm.default", trailing=2)
    if out is None or walk.base(out.sources[1], trailing=2) != "in2":
        return False
    weights = walk.op(out.sources[0], "_softmax.default", trailing=2)
    if (
        weights is None
        or not _last(weights.arguments.get("dim"), 4)
        or weights.arguments.get("half_to_float")
    ):
        return False
    scaled = walk.op(weights.sources[0], "mul.Tensor", "div.Tensor")
    factor = scaled.arguments.get("other") if scaled is not None else None
    if scaled is None or len(scaled.sources) != 1 or not isinstance(factor, (int, float)) or not factor:
        return False
    scale = float(factor) if scaled.name == "mul.Tensor" else 1 / float(factor)
    scores = walk.op(scaled.sources[0], "bmm.default", trailing=2)
    return (
        math.isclose(scale, expected, rel_tol=1e-6)
        and scores is not None
        and walk.base(scores.sources[0], trailing=2) == "in0"
        and _transposed(walk, scores.sources[1], "in1", 4)
    )
