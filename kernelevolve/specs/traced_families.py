"""Template families recognised from what a reference does, not how it is written.

The reference is built as its problem builds it (`Model(*get_init_inputs())`) and called once on meta
tensors while a dispatch mode records every ATen op with its arguments, schema defaults filled in. A family
is a short canonical op sequence over the forward's inputs whose parameters are the values the template's
`ModelNew` takes from the same constructor arguments: `torch.argmax(x, dim=self.dim)`, `x.argmax(self.dim)`
and `torch.argmax(input=x, dim=d)` are one program. Evidence: experiments/traced_families.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernelevolve.specs import traced_layers
from kernelevolve.specs.traced_program import TracedOp, TracedProgram, trace_program
from kernelevolve.types import KernelSpec

__all__ = ["TracedOp", "TracedProgram", "cached_program", "spec_families", "trace_program", "traced_families"]


# ------------------------------------------------------------------------------------------ families


def _dim(program: TracedProgram) -> int | None:
    """The one constructor argument the dim templates take (`ModelNew(dim)`), where it is an int."""
    if len(program.init) == 1 and isinstance(program.init[0], int) and not isinstance(program.init[0], bool):
        return program.init[0]
    return None


def _one_op(program: TracedProgram, name: str, output: str = "op0") -> TracedOp | None:
    if len(program.ops) == 1 and program.ops[0].name == name and program.ops[0].sources == ("in0",):
        return program.ops[0] if program.output == output else None
    return None


def _reduction(name: str, keepdim: bool, output: str = "op0") -> Callable[[TracedProgram], bool]:
    def matches(program: TracedProgram) -> bool:
        op, dim = _one_op(program, name, output), _dim(program)
        if op is None or dim is None:
            return False
        wanted = op.arguments.get("dim")
        return (
            wanted in (dim, [dim])
            and op.arguments.get("keepdim", False) is keepdim
            and not op.arguments.get("dtype")
        )

    return matches


def _scan(name: str) -> Callable[[TracedProgram], bool]:
    def matches(program: TracedProgram) -> bool:
        op, dim = _one_op(program, name), _dim(program)
        return (
            op is not None
            and dim is not None
            and op.arguments.get("dim") == dim
            and not op.arguments.get("dtype")
        )

    return matches


def _reverse_cumsum(program: TracedProgram) -> bool:
    dim = _dim(program)
    ops = program.ops
    if dim is None or [op.name for op in ops] != ["flip.default", "cumsum.default", "flip.default"]:
        return False
    flips_ok = all(op.arguments.get("dims") == [dim] for op in (ops[0], ops[2]))
    chained = ops[0].sources == ("in0",) and ops[1].sources == ("op0",) and ops[2].sources == ("op1",)
    return flips_ok and chained and ops[1].arguments.get("dim") == dim and program.output == "op2"


def _softmax(program: TracedProgram) -> bool:
    """Row softmax of a 2-D input (the templates' rows)."""
    op = _one_op(program, "_softmax.default")
    shape = program.input_shapes[0] if program.input_shapes else None
    if op is None or program.init or shape is None or len(shape) != 2:
        return False
    return op.arguments.get("dim") in (1, -1) and op.arguments.get("half_to_float") is False


def _l1norm_dim1(program: TracedProgram) -> bool:
    ops = program.ops
    if program.init or [op.name for op in ops] != ["abs.default", "mean.dim", "div.Tensor"]:
        return False
    reduced = ops[1].arguments.get("dim") == [1] and ops[1].arguments.get("keepdim") is True
    chained = ops[0].sources == ("in0",) and ops[1].sources == ("op0",) and ops[2].sources == ("in0", "op1")
    return reduced and chained and program.output == "op2"


def _l2norm_dim1(program: TracedProgram) -> bool:
    ops = program.ops
    if program.init or [op.name for op in ops] != ["linalg_vector_norm.default", "div.Tensor"]:
        return False
    norm = ops[0].arguments
    exact = (
        norm.get("ord") == 2
        and norm.get("dim") == [1]
        and norm.get("keepdim") is True
        and not norm.get("dtype")
    )
    chained = ops[0].sources == ("in0",) and ops[1].sources == ("in0", "op0")
    return exact and chained and program.output == "op1"


def _matvec(program: TracedProgram) -> bool:
    """(M, K) @ (K, 1); the same product at other sizes is a GEMM, which the matvec template refuses."""
    ops, shapes = program.ops, program.input_shapes
    if program.init or len(ops) != 1 or ops[0].name != "mm.default" or ops[0].sources != ("in0", "in1"):
        return False
    a, b = (shapes + (None, None))[:2]
    return a is not None and b is not None and len(a) == 2 and len(b) == 2 and b[1] == 1 and a[1] == b[0]


def _exclusive_cumsum(program: TracedProgram) -> bool:
    """zeros for the first element, then the cumsum of all but the last: KernelBench 92's program."""
    dim = _dim(program)
    ops = [op for op in program.ops if op.name != "detach.default"]
    names = [
        "slice.Tensor",
        "cumsum.default",
        "select.int",
        "unsqueeze.default",
        "zeros_like.default",
        "cat.default",
    ]
    shape = program.input_shapes[0] if program.input_shapes else None
    if (
        dim is None
        or shape is None
        or [op.name for op in ops] != names
        or program.output != f"op{len(program.ops) - 1}"
    ):
        return False
    cut, scan, first, lifted, _, joined = ops
    size = shape[dim]
    return (
        cut.sources == ("in0",)
        and cut.arguments == {"dim": dim, "start": 0, "end": size - 1, "step": 1}
        and scan.arguments.get("dim") == dim
        and first.sources == ("in0",)
        and first.arguments == {"dim": dim, "index": 0}
        and lifted.arguments.get("dim") == dim
        and joined.arguments.get("dim") == dim
        and len(joined.sources) == 2
    )


@dataclass(frozen=True)
class _Pool:
    """A pooling template: its ATen op, its spatial rank, and its ModelNew's parameters with their
    defaults (tests/test_traced_families.py checks them against the template's source)."""

    op: str
    rank: int
    parameters: tuple[str, ...]
    defaults: tuple[tuple[str, Any], ...]

    def bind(self, init: tuple[Any, ...]) -> dict[str, Any] | None:
        """The template's parameters for these constructor arguments, or None where they do not fit."""
        if len(init) > len(self.parameters):
            return None
        bound = dict(self.defaults) | dict(zip(self.parameters, init, strict=False))
        if any(name not in bound for name in self.parameters):
            return None
        if bound.get("stride") is None:
            bound["stride"] = bound["kernel_size"]
        return bound


_MAX = ("kernel_size", "stride", "padding", "dilation")
POOLS: dict[str, _Pool] = {
    "max_pool1d": _Pool(
        "max_pool2d_with_indices.default",
        1,
        (*_MAX, "return_indices"),
        (("stride", None), ("padding", 0), ("dilation", 1), ("return_indices", False)),
    ),
    "max_pool2d": _Pool(
        "max_pool2d_with_indices.default", 2, _MAX, (("stride", None), ("padding", 0), ("dilation", 1))
    ),
    "max_pool3d": _Pool(
        "max_pool3d_with_indices.default",
        3,
        (*_MAX, "return_indices", "ceil_mode"),
        (("stride", None), ("padding", 0), ("dilation", 1), ("return_indices", False), ("ceil_mode", False)),
    ),
    "avg_pool1d": _Pool(
        "avg_pool2d.default", 1, ("kernel_size", "stride", "padding"), (("stride", 1), ("padding", 0))
    ),
    "avg_pool2d": _Pool(
        "avg_pool2d.default", 2, ("kernel_size", "stride", "padding"), (("stride", None), ("padding", 0))
    ),
    "avg_pool3d": _Pool(
        "avg_pool3d.default",
        3,
        ("kernel_size", "stride", "padding", "ceil_mode"),
        (("stride", None), ("padding", 0), ("ceil_mode", False)),
    ),
}


def _pool(family: str) -> Callable[[TracedProgram], bool]:
    pool = POOLS[family]
    is_max = pool.op.startswith("max_pool")

    def matches(program: TracedProgram) -> bool:
        bound = pool.bind(program.init)
        if bound is None or not all(isinstance(v, int) for k, v in bound.items() if k in _MAX):
            return False
        if bound.get("return_indices"):
            return False
        ops = program.ops
        if pool.rank == 1:  # PyTorch runs a 1-D pool as the 2-D one over an inserted axis
            names = [op.name for op in ops]
            tail = ["squeeze.dim", "squeeze.dim"] if is_max else ["squeeze.dim"]
            if names != ["unsqueeze.default", pool.op, *tail] or ops[0].sources != ("in0",):
                return False
            if ops[0].arguments.get("dim") != -2 or program.output != "op2":
                return False
            op, lead = ops[1], {"kernel_size": 1, "stride": 1, "padding": 0, "dilation": 1}
            expected = {k: [lead[k], bound[k]] for k in _MAX if k in bound}
        else:
            if len(ops) != 1 or ops[0].name != pool.op or ops[0].sources != ("in0",):
                return False
            if program.output != ("op0[0]" if is_max else "op0"):
                return False
            op = ops[0]
            expected = {k: [bound[k]] * pool.rank for k in _MAX if k in bound}
        if is_max and "dilation" not in bound:
            expected["dilation"] = [1] * (pool.rank if pool.rank > 1 else 2)
        same = all(op.arguments.get(k) == v for k, v in expected.items())
        ceil = op.arguments.get("ceil_mode") is bool(bound.get("ceil_mode", False))
        plain_average = is_max or (
            op.arguments.get("count_include_pad") is True and op.arguments.get("divisor_override") is None
        )
        return same and ceil and plain_average

    return matches


_SDPA_ARGUMENTS = ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")  # after query, key, value


def _sdpa(program: TracedProgram) -> bool:
    """Attention over the forward's three inputs with no mask, dropout or causality, and a scale only as the
    templates' ModelNew(scale=None) takes it (a constructor argument, or none)."""
    if len(program.init) > 1:
        return False
    calls = [c for c in program.functions if c.name == "scaled_dot_product_attention"]
    if len(calls) != 1 or calls[0].sources != ("in0", "in1", "in2"):
        return False
    call = calls[0]
    named = {_SDPA_ARGUMENTS[int(k[3:]) - 3]: v for k, v in call.arguments.items() if k.startswith("arg")}
    named.update({k: v for k, v in call.arguments.items() if not k.startswith("arg")})
    scale = program.init[0] if program.init else None
    plain = (
        named.get("attn_mask") is None
        and named.get("dropout_p", 0.0) == 0.0
        and named.get("is_causal", False) is False
        and not named.get("enable_gqa", False)
        and named.get("scale") == scale
    )
    return plain and program.function_output == f"fn{program.functions.index(call)}"


def _topk_values(program: TracedProgram) -> bool:
    """The sorted k largest values over the last dim, k the constructor's one argument (ModelNew(k))."""
    op, k = _one_op(program, "topk.default", output="op0[0]"), _dim(program)
    if op is None or k is None or not program.input_shapes or program.input_shapes[0] is None:
        return False
    rank = len(program.input_shapes[0])
    return (
        op.arguments.get("k") == k
        and op.arguments.get("dim") in (-1, rank - 1)
        and op.arguments.get("largest") is True
        and op.arguments.get("sorted") is True
    )


def _segment_mean(program: TracedProgram) -> bool:
    """segment_reduce(values, "mean", lengths=..., initial=0) over dim 0 of 2-D values (ModelNew())."""
    if program.init or len(program.ops) != 1 or program.output != "op0":
        return False
    op = program.ops[0]
    shapes = program.input_shapes
    return (
        op.name == "segment_reduce.default"
        and op.sources == ("in0", "in1")
        and len(shapes) == 2
        and shapes[0] is not None
        and len(shapes[0]) == 2
        and shapes[1] is not None
        and len(shapes[1]) == 1
        and op.arguments.get("reduce") == "mean"
        and op.arguments.get("axis") == 0
        and op.arguments.get("indices") is None
        and op.arguments.get("offsets") is None
        and op.arguments.get("initial") == 0
    )


def _stateless(matches: Callable[[TracedProgram], bool]) -> Callable[[TracedProgram], bool]:
    """A family whose template holds no state: a reference with parameters or buffers is another program."""
    return lambda program: not program.state and matches(program)


FAMILIES: dict[str, Callable[[TracedProgram], bool]] = {
    **{
        family: _stateless(matches)
        for family, matches in {
            "argmax_dim": _reduction("argmax.default", keepdim=False),
            "argmin_dim": _reduction("argmin.default", keepdim=False),
            "sum_reduction": _reduction("sum.dim_IntList", keepdim=True),
            "mean_dim": _reduction("mean.dim", keepdim=False),
            "max_dim": _reduction("max.dim", keepdim=False, output="op0[0]"),
            "min_dim": _reduction("min.dim", keepdim=False, output="op0[0]"),
            "cumsum_dim": _scan("cumsum.default"),
            "cumprod_dim": _scan("cumprod.default"),
            "cumsum_reverse_dim": _reverse_cumsum,
            "softmax": _softmax,
            "l1norm_dim1": _l1norm_dim1,
            "l2norm_dim1": _l2norm_dim1,
            "matvec": _matvec,
            "cumsum_exclusive_dim": _exclusive_cumsum,
            "topk_values": _topk_values,
            "segment_mean": _segment_mean,
            "sdpa": lambda program: _sdpa(program) or traced_layers.attention(program),
            **{family: _pool(family) for family in POOLS},
        }.items()
    },
    # the templates that hold state check it themselves
    "rmsnorm": traced_layers.rmsnorm,
    "swiglu": traced_layers.swiglu,
    "layernorm": traced_layers.layernorm,
    "log_softmax": traced_layers.log_softmax,
    "batched_gemm": traced_layers.batched_gemm,
    "gemm_bias_relu": traced_layers.gemm_bias_relu,
    "elementwise_chain": traced_layers.elementwise_chain,
    "embedding_bag_sum": traced_layers.embedding_bag_sum,
    "embedding_bag_mean": traced_layers.embedding_bag_mean,
    "embedding_bag_weighted": traced_layers.embedding_bag_weighted,
    "dot_interaction": traced_layers.dot_interaction,
}


def traced_families(code: str, params: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The template families the reference's traced program (at these size constants) is an instance of."""
    program = cached_program(code, params)
    if program is None:
        return ()
    return tuple(family for family, matches in FAMILIES.items() if matches(program))


def cached_program(code: str, params: Mapping[str, Any] | None = None) -> TracedProgram | None:
    """`trace_program`, kept per (source, size constants): operators ask about one spec over and over."""
    values = dict(params or {})
    return _cached_program(code, _Params(repr(sorted(values.items())), values))


@dataclass(frozen=True)
class _Params:
    """Size constants as a cache key (their values may be lists)."""

    key: str
    values: Mapping[str, Any] = field(hash=False, compare=False)


@functools.lru_cache(maxsize=256)
def _cached_program(code: str, params: _Params) -> TracedProgram | None:
    return trace_program(code, params.values)


def spec_families(spec: KernelSpec) -> frozenset[str]:
    """The families the spec's reference is an instance of at every shape case it is evaluated at."""
    found = [set(traced_families(spec.reference_source, shape.params)) for shape in spec.shapes]
    return frozenset(set.intersection(*found) if found else traced_families(spec.reference_source))
