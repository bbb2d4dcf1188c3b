"""Reference module, models and inputs on the harness's device (KernelBench conventions).

The reference source is executed into a fresh module object that is never registered in
`sys.modules`, so two specs with the same constant names cannot see each other. Shapes rebind
the module-level size constants that `get_inputs`/`get_init_inputs` read.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelevolve.specs.reference_module import shaped_source
from kernelevolve.types import ShapeCase

if TYPE_CHECKING:
    import torch

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
_SOURCE_ATTR = "__kernelevolve_reference_source__"
_counter = itertools.count()


class ReferenceSpecError(ValueError):
    """The spec's reference cannot be used (a spec problem, not a candidate fault)."""


def load_reference(source: str) -> types.ModuleType:
    """Execute the reference source as a fresh, unregistered module with a unique name."""
    module = types.ModuleType(f"kernelevolve_eval_reference_{next(_counter)}")
    code = compile(source, f"<reference {module.__name__}>", "exec")
    exec(code, module.__dict__)  # the spec's own trusted reference
    missing = [name for name in REQUIRED_NAMES if not hasattr(module, name)]
    if missing:
        raise ReferenceSpecError(
            f"reference module lacks {missing}; KernelBench form needs {', '.join(REQUIRED_NAMES)}"
        )
    setattr(module, _SOURCE_ATTR, source)
    return module


def apply_shape(module: types.ModuleType, shape: ShapeCase) -> None:
    """Re-run the reference with `shape`'s constants written into its assignments.

    Rewriting the source (rather than setattr on the constants) keeps derived constants right:
    `bias_shape = (out_channels, 1, 1)` follows a new `out_channels`. Constants a shape does not
    set go back to their written values.
    """
    source = getattr(module, _SOURCE_ATTR)
    try:
        shaped = shaped_source(source, shape.params)
    except ValueError as exc:
        raise ReferenceSpecError(f"shape {shape.name!r}: {exc}") from None
    exec(compile(shaped, f"<reference {module.__name__} at {shape.name}>", "exec"), module.__dict__)


_WRITTEN_CONSTANTS = "__kernelevolve_written_constants__"


def apply_shape_to_copy(namespace: dict[str, Any], shape: ShapeCase) -> None:
    """A candidate module that defines the shape's constants itself (seeds that copy the reference, such as
    L3/33's `batch_size` read in __init__) gets the shape's values for them, and its written values back
    at a shape that does not set them. Only plain values are set; constants derived from them keep
    their written values."""
    written = namespace.setdefault(_WRITTEN_CONSTANTS, {})
    for name, value in written.items():
        if name not in shape.params:
            namespace[name] = value
    for name, value in shape.params.items():
        if isinstance(namespace.get(name), (int, float, bool, str, tuple)):
            written.setdefault(name, namespace[name])
            namespace[name] = value


def torch_dtype(name: str) -> torch.dtype:
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(
            f"spec dtype {name!r} is not a floating torch dtype (e.g. float32, float16, bfloat16)"
        )
    return dtype


def map_tensors(fn: Callable[[Any], Any], value: Any) -> Any:
    """`value` with `fn` applied to every tensor in it (through lists, tuples and dicts); the rest as is."""
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(fn, v) for k, v in value.items()}
    return value


def to_device(value: Any, device: str, dtype: torch.dtype) -> Any:
    """Move tensors (recursively through lists/tuples/dicts) to `device`; cast floating ones to `dtype`."""

    def move(tensor: torch.Tensor) -> torch.Tensor:
        if tensor.is_floating_point():
            return tensor.to(device=device, dtype=dtype).contiguous()
        return tensor.to(device=device)

    return map_tensors(move, value)


def seed_generators(seed: int, device: str) -> None:
    """What `torch.manual_seed(seed)` does for the generators `get_inputs()` can draw from here: the
    CPU one and, on a GPU, that device's. `torch.manual_seed` also walks every other device and backend,
    about 0.5 ms a call on a CUDA machine, which the timing loop would pay once per timed call while it
    holds the GPU."""
    import torch

    torch.default_generator.manual_seed(seed)
    if device.startswith("cuda"):
        index = torch.device(device).index
        generators = torch.cuda.default_generators  # empty until CUDA is initialised
        if generators:
            generators[index if index is not None else torch.cuda.current_device()].manual_seed(seed)
        else:
            torch.cuda.manual_seed(seed)  # queued for the lazy initialisation


def make_inputs(
    module: types.ModuleType, seed: int, device: str, dtype: torch.dtype, on_device: bool = False
) -> list[Any]:
    """`get_inputs()` under `torch.manual_seed(seed)`, moved to `device` and cast.

    By default the values are made on the host (the same on every device); `on_device` makes
    factory calls allocate on `device` directly, which is much faster for timing inputs.
    """
    import torch

    seed_generators(seed, device)
    if on_device:
        with torch.device(device):
            inputs = module.get_inputs()
    else:
        inputs = module.get_inputs()
    if not isinstance(inputs, (list, tuple)):
        raise ReferenceSpecError(f"get_inputs() must return a list or tuple, got {type(inputs).__name__}")
    return list(to_device(list(inputs), device, dtype))


def build_model(
    factory: Callable[..., Any],
    module: types.ModuleType,
    seed: int,
    device: str,
    dtype: torch.dtype,
    mode: str = "as_built",
) -> torch.nn.Module:
    """`factory(*get_init_inputs())` right after `torch.manual_seed(seed)`, on device/dtype, in `mode`.

    Initialised on the device where it can be (see `build_model_on`), else on the host.
    """
    if initialises_on_device(device):
        try:
            return build_model_on(factory, module, seed, device, dtype, on_device=True, mode=mode)
        except Exception:
            pass  # e.g. an __init__ that calls .numpy() or uses a CPU generator; the host build says why
    return build_model_on(factory, module, seed, device, dtype, on_device=False, mode=mode)


def initialises_on_device(device: str) -> bool:
    return device not in ("cpu", "meta")


def build_model_on(
    factory: Callable[..., Any],
    module: types.ModuleType,
    seed: int,
    device: str,
    dtype: torch.dtype,
    *,
    on_device: bool,
    mode: str = "as_built",
) -> torch.nn.Module:
    """`factory(*get_init_inputs())` right after `torch.manual_seed(seed)`, moved to device/dtype, in `mode`.

    Models compared with each other must be built by the same route with the same seed, so that
    parameters created in the same order get the same values. `on_device` runs the constructor
    under `torch.device(device)`: KernelBench's 32768x32768 Linear layers cost 13 s of host RNG and a
    4 GB copy per build on the host, milliseconds on a GPU. The values differ from a host build's.
    """
    init = seeded_init(module, seed, device, dtype)
    return construct(factory, init, device, dtype, on_device=on_device, mode=mode)


@dataclass(frozen=True)
class InitCall:
    """A constructor call as the judge prepared it: `get_init_inputs()` drawn right after
    `torch.manual_seed(seed)`, and the generators' states after that draw, so a runner building ModelNew
    from these arguments draws the same parameters as the reference built here."""

    arguments: list[Any]
    cpu_state: Any
    cuda_state: Any = None


def seeded_init(module: types.ModuleType, seed: int, device: str, dtype: torch.dtype) -> InitCall:
    import torch

    torch.manual_seed(seed)
    arguments = list(to_device(list(module.get_init_inputs()), "cpu", dtype))
    cuda_state = torch.cuda.get_rng_state(device) if device.startswith("cuda") else None
    return InitCall(arguments, torch.get_rng_state(), cuda_state)


def construct(
    factory: Callable[..., Any],
    init: InitCall,
    device: str,
    dtype: torch.dtype,
    *,
    on_device: bool,
    mode: str = "as_built",
) -> torch.nn.Module:
    """`factory(*init.arguments)` with the generators where `init` left them, moved to device/dtype, in
    `mode` (`apply_mode`)."""
    import torch

    torch.set_rng_state(init.cpu_state)
    if init.cuda_state is not None:
        torch.cuda.set_rng_state(init.cuda_state, device)
    if on_device:
        with torch.device(device):
            model = factory(*init.arguments)
    else:
        model = factory(*init.arguments)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{getattr(factory, '__name__', factory)!r} did not build an nn.Module")
    model = model.to(device=device, dtype=dtype)
    return apply_mode(model, mode)


MODES = ("as_built", "eval", "train")


def apply_mode(model: Any, mode: str) -> Any:
    """The model in `mode`: as its constructor left it ("as_built": nn.Module starts in training mode, so
    BatchNorm uses batch statistics and updates its running ones, as KernelBench runs it), or switched
    to "eval" or "train" because the spec says so. Never switched behind the spec's back."""
    if mode == "eval":
        model.eval()
    elif mode == "train":
        model.train()
    elif mode != "as_built":
        raise ValueError(f"unknown model mode {mode!r}; expected one of {list(MODES)}")
    return model


PERTURB_SCALE = 0.1


def perturb_constant_state(reference_model: Any, candidate_model: Any, seed: int) -> list[str]:
    """Both models in one process (tests, the export's check): `perturbed_constant_state` on the
    reference, then `apply_constant_state` on the candidate; returns the candidate's names changed."""
    return apply_constant_state(candidate_model, perturbed_constant_state(reference_model, seed))


@dataclass(frozen=True)
class ConstantState:
    """A constant-initialised floating tensor of the reference (a norm's weight of ones, a bias of zeros)
    and the random values it was given instead."""

    name: str
    constant: float
    values: Any  # a host tensor


def perturbed_constant_state(reference_model: Any, seed: int) -> list[ConstantState]:
    """Give every constant-initialised floating tensor of the reference random values (in place).

    At their default init such tensors hide kernels that ignore them (a weight of ones, a running mean
    of zeros). The judge changes the reference's whatever the candidate holds, and the runner gives the
    candidate's counterparts the same values (`apply_constant_state`), so a runner gains nothing by
    misreporting what it has.
    """
    import torch

    changed = []
    for index, (name, tensor) in enumerate(_floating_state(reference_model).items()):
        value = _constant_value(tensor) if tensor.numel() else None
        if value is None:
            continue
        generator = torch.Generator().manual_seed(seed * 7919 + index)
        noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
        # zeros get small values; non-zero constants keep their sign (a variance stays positive)
        fresh = PERTURB_SCALE * noise if value == 0 else value * torch.exp(PERTURB_SCALE * noise)
        with torch.no_grad():
            tensor.copy_(fresh.to(device=tensor.device, dtype=tensor.dtype))
        changed.append(ConstantState(name, value, fresh))
    return changed


def apply_constant_state(model: Any, state: list[ConstantState]) -> list[str]:
    """The candidate's counterparts of the reference's perturbed tensors get the same values: by name,
    else (a ModelNew that names its parameters its own way) the next unmatched tensor of the same shape
    and the same constant, in order, its parameters and buffers before tensors in its plain attributes;
    then, for those left, one whose shape differs only by size-1 dimensions (a weight kept as
    `(1, C, 1, 1)` to broadcast: the same elements in the same order), given the values in its shape.
    Returns the names changed."""
    import torch

    # a ModelNew may keep a running statistic in a plain attribute (`self.running_mean = torch.zeros(n)`)
    # where the reference registers a buffer: after its parameters and buffers, so those are matched first
    ours = {name: t for name, t in {**_floating_state(model), **_plain_floating(model)}.items() if t.numel()}
    free = {name: _constant_value(t) for name, t in ours.items()}
    pairs: list[tuple[str, ConstantState]] = []
    for item in state:
        target = ours.get(item.name)
        if target is not None and target.shape == item.values.shape and free.get(item.name) == item.constant:
            pairs.append((item.name, item))
            free.pop(item.name)
    for same_shape in (_same_shape, same_elements):
        matched = {entry.name for _, entry in pairs}
        for item in state:
            if item.name in matched:
                continue
            name = next(
                (
                    n
                    for n, v in free.items()
                    if v == item.constant and same_shape(ours[n].shape, item.values.shape)
                ),
                None,
            )
            if name is not None:
                pairs.append((name, item))
                free.pop(name)
    with torch.no_grad():
        for name, item in pairs:
            target = ours[name]
            target.copy_(item.values.to(device=target.device, dtype=target.dtype).reshape(target.shape))
    return [name for name, _ in pairs]


def _same_shape(ours: Any, theirs: Any) -> bool:
    return tuple(ours) == tuple(theirs)


def same_elements(ours: Any, theirs: Any) -> bool:
    """Shapes that differ only by size-1 dimensions: a reshape keeps every element in its place."""
    return [d for d in ours if d != 1] == [d for d in theirs if d != 1]


def _floating_state(model: Any) -> dict[str, Any]:
    state = dict(model.named_parameters())
    state.update((name, b) for name, b in model.named_buffers() if b is not None and b.is_floating_point())
    return state


def _plain_floating(model: Any) -> dict[str, Any]:
    """Floating tensors held in plain attributes of the module and its submodules (exactly torch.Tensor: a
    parameter lives in `_parameters`, a subclass is not state; not an inference tensor, which cannot be
    written outside inference mode), by dotted name."""
    import torch

    found = {}
    for prefix, module in model.named_modules():
        for key, value in vars(module).items():
            if type(value) is torch.Tensor and value.is_floating_point() and not value.is_inference():
                found[f"{prefix}.{key}" if prefix else key] = value
    return found


def _constant_value(tensor: Any) -> float | None:
    first = tensor.detach().reshape(-1)[0]
    if not bool((tensor.detach() == first).all()):
        return None
    return float(first)
