"""Write a standalone training candidate from Inductor's forward and backward programs, one pair per shape.

Per shape, a torch.autograd.Function runs the forward program (its kernels, launched here) and saves what
Inductor's partitioner saves; its backward runs the backward program on those and the upstream
gradients. ModelNew's `__init__` is the reference's (its parameters match), and `forward` hands the
function the graph inputs of the shape it is given: the parameters, buffers and inputs Dynamo kept, in
Dynamo's order, whose gradients the backward returns in the same order. Kernels are tunables per pass
(`F<shape>_K<n>_*` for the forward, `B<shape>_K<n>_*` for the backward), as `render.py` makes them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelevolve.variation.codegen.emit import reference_parts
from kernelevolve.variation.compiler.program import Program
from kernelevolve.variation.compiler.render import (
    ProgramBlocks,
    RenderError,
    ShapeProgram,
    _dispatch_condition,
)


@dataclass(frozen=True)
class TrainingProgram:
    """One shape's pair: the forward program (the user's `outputs`, then `saved` values) and the backward
    (the saved values and one gradient per output in, one gradient per graph input out)."""

    shape: str
    input_shapes: tuple[tuple[int, ...], ...]
    graph_inputs: tuple[int, ...]  # positions in [*parameters, *buffers, *inputs]
    constants: tuple[tuple[int, object], ...]
    forward: Program
    backward: Program
    outputs: int
    saved: int


def render_training(
    reference_source: str,
    programs: list[TrainingProgram],
    title: str,
    interpreter: bool = False,
    own_kernels: bool = False,
) -> tuple[str, dict[str, int]]:
    """(candidate source, tunables and their defaults), as `render.render` but forward and backward."""
    prelude, bases, class_body, forward_sig = reference_parts(reference_source)
    blocks = ProgramBlocks(interpreter, own_kernels)
    functions = []
    for index, pair in enumerate(programs):
        if len(pair.forward.arg_names) != len(pair.graph_inputs):
            raise RenderError(
                f"shape {pair.shape}: the forward takes {len(pair.forward.arg_names)} arguments, the graph "
                f"{len(pair.graph_inputs)}"
            )
        if len(pair.backward.arg_names) != pair.saved + pair.outputs:
            raise RenderError(
                f"shape {pair.shape}: the backward takes {len(pair.backward.arg_names)} arguments"
            )
        blocks.add(_shaped(pair, pair.forward), f"_f{index}", f"F{index}", f"_forward_s{index}")
        blocks.add(_shaped(pair, pair.backward), f"_b{index}", f"B{index}", f"_backward_s{index}")
        functions.append(_function(index, pair))
    docstring = (
        f'"""Inductor\'s Triton kernels for {title}, forward and backward (AOTAutograd\'s joint graph '
        'partitioned as torch.compile does), launched by ModelNew itself (compiler_seed)."""'
    )
    lines = blocks.module_lines(docstring, prelude)
    for function in functions:
        lines += ["", "", function]
    lines += ["", "", f"class ModelNew({bases}):"]
    lines += ["    " + line if line else "" for line in class_body.splitlines()]
    lines += ["", f"    def forward({forward_sig}):", *_forward_body(forward_sig, programs)]
    source = "\n".join(lines) + "\n"
    ast.parse(source)  # a rendering bug must surface here, not as a candidate's compile error
    return source, blocks.defaults()


def _shaped(pair: TrainingProgram, program: Program) -> ShapeProgram:
    return ShapeProgram(pair.shape, pair.input_shapes, (), program)


def _function(index: int, pair: TrainingProgram) -> str:
    outputs = "outputs[0]" if pair.outputs == 1 else f"tuple(outputs[:{pair.outputs}])"
    return "\n".join(
        [
            f"class _Step_s{index}(torch.autograd.Function):",
            f'    """Shape {pair.shape}: Inductor\'s forward, saving what its backward takes."""',
            "",
            "    @staticmethod",
            "    def forward(ctx, *inputs):",
            "        device = next(t.device for t in inputs if isinstance(t, torch.Tensor))",
            f"        outputs = _forward_s{index}(list(inputs), device)",
            f"        ctx.save_for_backward(*outputs[{pair.outputs}:])",
            f"        return {outputs}",
            "",
            "    @staticmethod",
            "    def backward(ctx, *grads):",
            "        device = grads[0].device",
            "        tangents = [g.contiguous() for g in grads]",
            f"        return tuple(_backward_s{index}([*ctx.saved_tensors, *tangents], device))",
        ]
    )


def _forward_body(forward_sig: str, programs: list[TrainingProgram]) -> list[str]:
    """Direct calls per input shapes, as `render._forward_body` (the static checks follow the launches)."""
    params = [a for a in ast.parse(f"def f({forward_sig}): pass").body[0].args.args[1:]]  # type: ignore[attr-defined]
    names = ", ".join(a.arg for a in params)
    lines = [
        f"        inputs = [{names}]",
        "        key = tuple(tuple(t.shape) for t in inputs if isinstance(t, torch.Tensor))",
        "        args = [*[t for _, t in self.named_parameters()], *[t for _, t in self.named_buffers()], *inputs]",
    ]
    for index, pair in enumerate(programs):
        keyword = "if" if index == 0 else "elif"
        shaped = ShapeProgram(pair.shape, pair.input_shapes, (), pair.forward, None, pair.constants)
        lines += [
            f"        {keyword} {_dispatch_condition(shaped)}:",
            f"            return _Step_s{index}.apply(*[args[i] for i in {pair.graph_inputs!r}])",
        ]
    lines.append("        raise NotImplementedError(f'no generated program for input shapes {key}')")
    return lines
