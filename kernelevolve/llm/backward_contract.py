"""The backward contract of a training spec, as prompt text: what a ModelNew must compute and how it is judged.

Not wired into `prompts.py` here (issue 38 owns the prompts): `problem_section` would append
`backward_contract(spec, strict)` after the tolerance line; it is empty for a forward spec.
"""

from __future__ import annotations

from kernelevolve.types import KernelSpec


def backward_contract(spec: KernelSpec, strict: bool) -> str:
    """Prompt text for a spec with a backward ("" without one)."""
    if spec.backward is None:
        return ""
    inputs = (
        "every floating input"
        if spec.backward.inputs is None
        else "inputs " + ", ".join(str(i) for i in spec.backward.inputs) + " (positions in get_inputs())"
    )
    parameters = (
        "every parameter"
        if spec.backward.parameters is None
        else "no parameter"
        if not spec.backward.parameters
        else "the parameters " + ", ".join(spec.backward.parameters)
    )
    rules = [
        "## Training: forward and backward",
        f"This is a training spec: gradients of {inputs} and of {parameters} are checked too, against PyTorch's "
        "autograd of Model, at the same tolerance, for upstream gradients drawn afresh per call; the time that "
        "counts is forward + backward (each is also timed apart).",
        "- Make ModelNew's output differentiable with a torch.autograd.Function whose forward and backward "
        "launch your kernels: save what the backward needs (ctx.save_for_backward), return one gradient per "
        "forward argument (None for non-tensors). A forward outside autograd gives no gradient, which counts as "
        "zeros and fails.",
        "- Never write into the inputs or the upstream gradient (the check sees it); allocate the gradients.",
        "- Parameter gradients summed over rows: accumulate per program in fp32, then reduce the partial sums "
        "in a second kernel.",
    ]
    if strict:
        rules.append(
            "- Strict mode covers the backward: no PyTorch compute there either (the backward runs inside the "
            "checked call, and its PyTorch ops are traced)."
        )
    return "\n".join(rules)
