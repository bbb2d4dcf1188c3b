"""Export winners as a `torch.library` custom op that torch.compile can trace through.

One op per spec: ``kernelevolve::<spec>_<key>(Tensor[] inputs, Tensor[] state, int config) -> Tensor``.
`state` is the module's parameters and buffers (in `named_parameters()` then `named_buffers()`
order), so the op is functional and can serve any module instance with the reference's structure.
Dispatch is keyed on the inputs' shapes and dtypes: the kernel found for a benchmarked shape serves
inputs of exactly that shape (on the platform's device type); anything else runs the reference
computation, because a kernel tuned for one shape can be slower, or wrong, at another. Each call's
path is recorded (`calls`, `counts`). The fake (meta) implementation and the backward run the
reference itself on fake / saved tensors, so tracing needs no kernel and training still works.

With `verify=True` every kernel is checked once when loaded exactly as the search checks it: the
harness's inputs recipe and per-trial seeds (fresh ones), the platform's `correctness_trials`, the
spec's tolerance and `kernelevolve.eval.correctness`. Only the weights differ, on purpose: the op
serves any instance's weights, so it is checked with the module's own (or the spec's seeded ones),
perturbed, where the search sees the spec's seeded init alone. A mismatch disables that shape
(`on_mismatch="disable"`) or raises (`"raise"`).
"""

from __future__ import annotations

import collections
import copy
import itertools
import logging
import random
import re
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevolve.export.loader import KernelLoadError, interpreter_ready, load_kernel_class
from kernelevolve.export.store import Artifact, ArtifactStore, artifacts_from_run
from kernelevolve.types import KernelSpec

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

NAMESPACE = "kernelevolve"
REFERENCE_PATH = "reference"
_NOT_APPLICABLE = "not applicable"
_ON_MISMATCH = ("disable", "raise")
_op_counter = itertools.count()
_wrapper_classes: dict[type, type] = {}


__all__ = [
    "ExportError",
    "KernelLoadError",
    "KernelOp",
    "KernelVerificationError",
    "export_custom_op",
    "interpreter_ready",
    "load_kernel_class",
]


class ExportError(ValueError):
    """A winner that cannot be exported as asked; the message says why."""


class KernelVerificationError(RuntimeError):
    """A kernel did not match the reference when re-verified on load."""


# ------------------------------------------------------------------------------------------ helpers


def _signature(inputs: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple((tuple(int(d) for d in t.shape), str(t.dtype)) for t in inputs)


def _state_names(model: torch.nn.Module) -> list[str]:
    return [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]


def _fresh(out: Any, sources: Sequence[torch.Tensor]) -> Any:
    """Custom-op outputs may not alias inputs: copy any output that shares storage with one."""
    import torch

    if isinstance(out, (tuple, list)):
        return [_fresh(o, sources) for o in out]
    if not isinstance(out, torch.Tensor):
        raise ExportError(f"the computation returned {type(out).__name__}; a custom op must return tensors")
    pointer = out.untyped_storage().data_ptr()
    if any(t.untyped_storage().data_ptr() == pointer for t in sources):
        return out.clone()
    return out


def _op_name(spec: KernelSpec) -> str:
    import torch

    base = re.sub(r"\W+", "_", spec.name).strip("_").lower() or "op"
    name = f"{base}_{spec.key[:8]}"
    while hasattr(getattr(torch.ops, NAMESPACE), name):
        name = f"{base}_{spec.key[:8]}_{next(_op_counter)}"
    return name


class KernelOp:
    """A spec's winning kernels behind one custom op, with a reference fallback for other shapes."""

    def __init__(
        self,
        spec: KernelSpec,
        platform: str,
        kernels: Mapping[str, Artifact],
        *,
        verify: bool = True,
        on_mismatch: str = "disable",
        min_speedup: float | None = None,
        seed: int = 0,
        history: int = 10_000,
    ) -> None:
        from kernelevolve.platforms import load_platform
        from kernelevolve.specs import reference

        if on_mismatch not in _ON_MISMATCH:
            raise ValueError(f"on_mismatch must be one of {_ON_MISMATCH}, got {on_mismatch!r}")
        self.spec = spec
        self.platform = load_platform(platform)
        self.seed = seed
        self.on_mismatch = on_mismatch
        self.verify_on_load = verify
        self.dtype = reference.torch_dtype(spec.dtype)
        self.calls: collections.deque[str] = collections.deque(maxlen=history)
        self.counts: collections.Counter[str] = collections.Counter()
        self.disabled: dict[tuple[int, str], str] = {}
        self._shapes = {s.name: s for s in spec.shapes}
        unknown = sorted(set(kernels) - set(self._shapes))
        if unknown:
            raise ExportError(
                f"kernels for unknown shape(s) {unknown}; spec {spec.name} has {list(self._shapes)}"
            )
        self.kernels = {
            name: a
            for name, a in kernels.items()
            if min_speedup is None or (a.speedup_vs_eager or 0.0) >= min_speedup
        }
        self._templates: list[torch.nn.Module] = [self._meta_model(spec.shapes[0].name)]
        self.state_names = _state_names(self._templates[0])
        self._multi, self._by_signature = self._probe_shapes()
        self._classes: dict[str, type] = {}
        self._models: dict[tuple[str, str], torch.nn.Module] = {}
        for name, artifact in self.kernels.items():
            try:
                self._classes[name] = load_kernel_class(
                    artifact.source, artifact.backend, self.platform.device
                )
            except Exception as exc:  # a kernel that cannot load never serves; the reference does
                self.disabled[(0, name)] = f"cannot load: {type(exc).__name__}: {exc}"
                log.warning("kernel for %s/%s disabled: %s", spec.name, name, self.disabled[(0, name)])
        self.name = _op_name(spec)
        self.qualname = f"{NAMESPACE}::{self.name}"
        self.op = self._register()
        if verify:
            self.verify()

    # -------------------------------------------------------------------------------- set-up
    def _namespace(self, shape: str) -> types.ModuleType:
        from kernelevolve.specs import reference

        module = reference.load_reference(self.spec.reference_source)
        reference.apply_shape(module, self._shapes[shape])
        return module

    def _meta_model(self, shape: str) -> torch.nn.Module:
        from kernelevolve.specs import reference

        namespace = self._namespace(shape)
        return reference.build_model(
            namespace.Model, namespace, self.seed, "meta", self.dtype, self.spec.mode
        )

    def _probe_shapes(self) -> tuple[bool, dict[tuple[Any, ...], str]]:
        """Output arity (from the reference on meta tensors) and the input signature of every shape."""
        import torch

        from kernelevolve.specs import reference

        by_signature: dict[tuple[Any, ...], str] = {}
        multi = False
        for index, shape in enumerate(self.spec.shapes):
            namespace = self._namespace(shape.name)
            with torch.device("meta"):
                inputs = reference.to_device(list(namespace.get_inputs()), "meta", self.dtype)
            if not all(isinstance(t, torch.Tensor) for t in inputs):
                raise ExportError(f"spec {self.spec.name}: a custom op takes tensor inputs only")
            by_signature.setdefault(_signature(inputs), shape.name)
            if index == 0:
                with torch.no_grad():
                    out = self._templates[0](*inputs)
                multi = isinstance(out, (tuple, list))
        return multi, by_signature

    def _register(self) -> Any:
        import torch

        result = "Tensor[]" if self._multi else "Tensor"
        schema = f"(Tensor[] inputs, Tensor[] state, int config=0) -> {result}"
        op = torch.library.custom_op(self.qualname, self._impl, mutates_args=(), schema=schema)
        op.register_fake(self._fake)
        op.register_autograd(self._backward, setup_context=self._setup_context)
        return getattr(getattr(torch.ops, NAMESPACE), self.name).default

    # -------------------------------------------------------------------------------- paths
    def _reference_call(self, inputs: Sequence[Any], state: Sequence[Any], config: int) -> Any:
        from torch.func import functional_call

        return functional_call(
            self._templates[config], dict(zip(self.state_names, state, strict=True)), tuple(inputs)
        )

    def _kernel_model(self, shape: str, device: Any) -> torch.nn.Module:
        from kernelevolve.specs import reference

        key = (shape, str(device))
        if key not in self._models:
            namespace = self._namespace(shape)
            model = reference.build_model(
                self._classes[shape], namespace, self.seed, str(device), self.dtype, self.spec.mode
            )
            missing = sorted(set(self.state_names) - set(_state_names(model)))
            if missing:
                raise ExportError(f"ModelNew lacks the reference's state {missing}")
            self._models[key] = model
        return self._models[key]

    def _kernel_call(self, shape: str, inputs: Sequence[Any], state: Sequence[Any]) -> Any:
        from torch.func import functional_call

        model = self._kernel_model(shape, inputs[0].device)
        return functional_call(model, dict(zip(self.state_names, state, strict=True)), tuple(inputs))

    def serving_shape(self, inputs: Sequence[Any], config: int = 0) -> str | None:
        """The shape whose kernel would serve these inputs, or None for the reference path."""
        shape = self._by_signature.get(_signature(inputs))
        if shape is None or shape not in self._classes or (config, shape) in self.disabled:
            return None
        if not inputs or inputs[0].device.type != self.platform.device:
            return None
        return shape

    def _impl(self, inputs: list[Any], state: list[Any], config: int = 0) -> Any:
        shape = self.serving_shape(inputs, config)
        path = REFERENCE_PATH
        out = None
        if shape is not None:
            try:
                out = self._kernel_call(shape, inputs, state)
                path = f"kernel:{shape}"
            except ExportError as exc:
                self.disabled[(config, shape)] = str(exc)
                log.warning("kernel for %s/%s disabled: %s", self.spec.name, shape, exc)
        if out is None:
            out = self._reference_call(inputs, state, config)
        self.calls.append(path)
        self.counts[path] += 1
        return _fresh(out, [*inputs, *state])

    def _fake(self, inputs: list[Any], state: list[Any], config: int = 0) -> Any:
        import torch

        out = self._reference_call(inputs, state, config)  # the reference on fake (meta) tensors
        if isinstance(out, (tuple, list)):
            return [torch.empty_like(o) for o in out]
        return torch.empty_like(out)

    def _setup_context(self, ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        tensors, state, config = inputs
        ctx.n_inputs = len(tensors)
        ctx.config = config
        ctx.save_for_backward(*tensors, *state)

    def _backward(self, ctx: Any, grad: Any) -> tuple[Any, Any, None]:
        """Gradients of the reference computation (vjp), for every floating input and state tensor."""
        import torch

        saved = list(ctx.saved_tensors)
        n = ctx.n_inputs
        wanted = [i for i, t in enumerate(saved) if t.is_floating_point()]

        def run(*leaves: Any) -> Any:
            values = list(saved)
            for index, leaf in zip(wanted, leaves, strict=True):
                values[index] = leaf
            out = self._reference_call(values[:n], values[n:], ctx.config)
            return tuple(out) if isinstance(out, (tuple, list)) else out

        _, vjp = torch.func.vjp(run, *[saved[i] for i in wanted])[:2]
        grads = vjp(tuple(grad) if isinstance(grad, (tuple, list)) else grad)
        full: list[Any] = [None] * len(saved)
        for index, value in zip(wanted, grads, strict=True):
            full[index] = value
        return full[:n], full[n:], None

    # -------------------------------------------------------------------------------- use
    def __call__(self, *inputs: Any, state: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
        """Call the op directly; `state` is required when the reference has parameters or buffers."""
        if isinstance(state, Mapping):
            state = [state[n] for n in self.state_names]
        if state is None:
            if self.state_names:
                raise ExportError(f"this op needs state tensors {self.state_names} (or use .wrap(module))")
            state = []
        out = self.op(list(inputs), list(state), 0)
        return tuple(out) if self._multi else out

    def wrap(self, module: torch.nn.Module) -> torch.nn.Module:
        """A drop-in for `module`: same class (a subclass), same parameters (shared), forward via the op."""
        names = _state_names(module)
        if names != self.state_names:
            raise ExportError(
                f"{type(module).__name__} has state {names}; the spec's reference has {self.state_names}"
            )
        self._templates.append(copy.deepcopy(module).to("meta"))
        config = len(self._templates) - 1
        if self.verify_on_load:
            self.verify(config, state=[*module.parameters(), *module.buffers()])
        cls: Any = _wrapper_class(type(module))
        wrapped = cls.__new__(cls)
        wrapped.__dict__.update(module.__dict__)
        wrapped.__dict__.update(
            _kernelevolve_op=self.op, _kernelevolve_config=config, _kernelevolve_multi=self._multi
        )
        return wrapped

    def module(self, device: str | None = None) -> torch.nn.Module:
        """The spec's reference Model (first shape, seeded as in the search), wrapped to use the op."""
        from kernelevolve.specs import reference

        namespace = self._namespace(self.spec.shapes[0].name)
        target = device or ("cpu" if self.platform.device == "cpu" else "cuda")
        return self.wrap(
            reference.build_model(namespace.Model, namespace, self.seed, target, self.dtype, self.spec.mode)
        )

    def disabled_shapes(self, config: int = 0) -> dict[str, str]:
        return {shape: why for (c, shape), why in self.disabled.items() if c == config}

    # -------------------------------------------------------------------------------- verification
    def _verify_device(self) -> str | None:
        import torch

        if self.platform.device == "cpu":
            return "cpu"
        return "cuda" if torch.cuda.is_available() else None

    def verify(
        self,
        config: int = 0,
        seed: int | None = None,
        trials: int | None = None,
        state: Sequence[Any] | None = None,
    ) -> dict[str, str]:
        """Check each served shape's kernel against the reference once; returns shape -> problem ('' if ok).

        `trials` defaults to the platform's `correctness_trials`, as in the search. `state` is the
        module's own parameters and buffers (default: the spec's seeded Model at each shape);
        floating ones are perturbed so a kernel that ignores or caches weights shows up.
        """
        from kernelevolve.verify import platform_settings

        device = self._verify_device()
        if device is None:
            log.info("%s: no %s device here; kernels not re-verified", self.qualname, self.platform.device)
            return {}
        base_seed = random.SystemRandom().randrange(1 << 30) if seed is None else seed
        if trials is None:
            trials = platform_settings(self.platform.name).correctness_trials
        outcome: dict[str, str] = {}
        for shape in [s for s in self._classes if (config, s) not in self.disabled]:
            problem = self._verify_shape(shape, config, device, base_seed, trials, state)
            outcome[shape] = problem
            if not problem:
                continue
            self.disabled[(config, shape)] = problem
            if problem.startswith(_NOT_APPLICABLE):  # e.g. a module whose weights fit another shape
                log.info("%s: kernel for shape %s unused: %s", self.qualname, shape, problem)
                continue
            log.warning("%s: kernel for shape %s disabled: %s", self.qualname, shape, problem)
            if self.on_mismatch == "raise":
                raise KernelVerificationError(f"{self.spec.name} at shape {shape}: {problem}")
        return outcome

    def _verify_shape(
        self, shape: str, config: int, device: str, seed: int, trials: int, state: Sequence[Any] | None
    ) -> str:
        import torch

        from kernelevolve.eval import correctness, stages
        from kernelevolve.specs import reference

        namespace = self._namespace(shape)
        index = [s.name for s in self.spec.shapes].index(shape)
        if state is None:
            model = reference.build_model(
                namespace.Model, namespace, self.seed, device, self.dtype, self.spec.mode
            )
            state = [*model.parameters(), *model.buffers()]
        torch.manual_seed(seed)
        weights = [
            (t.detach().to(device) * (0.5 + torch.rand_like(t, device=device)))
            if t.is_floating_point()
            else t.detach().to(device)
            for t in state
        ]
        try:
            # The harness's own input maker and trial seeds: inputs made, and checked, as in the search.
            verdict = correctness.check_correctness(
                lambda *x: self._reference_call(x, weights, config),
                lambda *x: self._kernel_call(shape, x, weights),
                stages.input_maker(namespace, device, self.dtype),
                [stages.trial_seed(seed, index, t) for t in range(trials)],
                self.spec.atol,
                self.spec.rtol,
            )
        except correctness.CandidateFailure as failure:
            return f"kernel raised {type(failure.original).__name__}: {failure.original}"
        except (reference.ReferenceSpecError, ExportError) as exc:
            return f"{_NOT_APPLICABLE}: {exc}"
        return "" if verdict.ok else f"{verdict.check}: {verdict.feedback}"

    # -------------------------------------------------------------------------------- constructors
    @classmethod
    def from_artifacts(cls, artifacts: Sequence[Artifact], **options: Any) -> KernelOp:
        """Per-shape artifacts serve their shape; an all-shapes artifact serves shapes without one."""
        if not artifacts:
            raise ExportError("no artifacts to export (the run found no correct kernel?)")
        spec, platform = artifacts[0].spec, artifacts[0].platform
        if any(a.spec_key != spec.key or a.platform != platform for a in artifacts):
            raise ExportError("artifacts of different specs or platforms cannot share one op")
        kernels = {a.shape: a for a in artifacts if not a.all_shapes}
        for overall in (a for a in artifacts if a.all_shapes):
            for shape in spec.shapes:
                kernels.setdefault(shape.name, overall)
        return cls(spec, platform, kernels, **options)

    @classmethod
    def from_run(cls, run_dir: Path | str, **options: Any) -> KernelOp:
        return cls.from_artifacts(artifacts_from_run(run_dir), **options)

    @classmethod
    def from_store(
        cls,
        spec: KernelSpec | str,
        platform: str,
        store: ArtifactStore | Path | str | None = None,
        **options: Any,
    ) -> KernelOp:
        db = store if isinstance(store, ArtifactStore) else ArtifactStore(store)
        artifacts = list(db.shape_kernels(spec, platform).values())
        overall = db.lookup(spec, platform)
        if overall is not None:
            artifacts.append(overall)
        if not artifacts:
            raise ExportError(
                f"no stored kernel for spec {spec if isinstance(spec, str) else spec.name} on {platform}"
            )
        return cls.from_artifacts(artifacts, **options)


def _wrapped_forward(self: Any, *inputs: Any) -> Any:
    state = [*self.parameters(), *self.buffers()]
    out = self._kernelevolve_op(list(inputs), state, self._kernelevolve_config)
    return tuple(out) if self._kernelevolve_multi else out


def _wrapper_class(base: type) -> type:
    if base not in _wrapper_classes:
        _wrapper_classes[base] = type(
            f"{base.__name__}WithKernels",
            (base,),
            {"forward": _wrapped_forward, "__module__": __name__, "__doc__": base.__doc__},
        )
    return _wrapper_classes[base]


def export_custom_op(winner: Any, **options: Any) -> KernelOp:
    """A KernelOp from a run directory, an `OptimizeResult`, or a list of store artifacts."""
    if isinstance(winner, (str, Path)):
        return KernelOp.from_run(winner, **options)
    run_dir = getattr(winner, "run_dir", None)
    if run_dir is not None:
        return KernelOp.from_run(run_dir, **options)
    if isinstance(winner, Sequence) and all(isinstance(a, Artifact) for a in winner):
        return KernelOp.from_artifacts(list(winner), **options)
    raise TypeError(
        f"cannot export {type(winner).__name__}: give a run directory, an OptimizeResult or artifacts"
    )
