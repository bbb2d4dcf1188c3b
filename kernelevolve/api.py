"""Python API: `optimize(...)` a spec or an nn.Module and get a drop-in kernel back.

    result = kernelevolve.optimize(MyNorm(dim=512), torch.randn(8, 512), platform="h200",
                                   budget=kernelevolve.Budget(max_evaluations=40, seconds=600))
    fast = result.as_module()        # the winning ModelNew with MyNorm's weights, same forward signature

The configuration is composed from conf/ with Hydra's compose API, exactly as the CLI composes it,
then handed to `app.run_search`. A KernelSpec or an nn.Module is first written to a spec YAML file
(under `<run_root>/_specs/`) so the run resolves and records it like any spec file.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kernelevolve.paths import CONF_DIR
from kernelevolve.types import KernelSpec, ShapeCase

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

SPEC_OVERRIDE_KEYS = ("name", "description", "dtype", "atol", "rtol", "backends", "tags", "shapes")


class NoKernelFound(RuntimeError):
    """The search ended without a correct kernel, so there is nothing to load."""


class DropInError(RuntimeError):
    """The winning kernel cannot stand in for the module (its parameters differ)."""


@dataclass(frozen=True)
class Budget:
    """How long a search may run: evaluations and/or wall-clock seconds (None: no such limit)."""

    max_evaluations: int | None = None
    seconds: float | None = None

    @staticmethod
    def of(value: Budget | int | Mapping[str, Any] | None) -> Budget | None:
        if value is None or isinstance(value, Budget):
            return value
        if isinstance(value, bool):
            raise TypeError("budget must be a Budget, an int (evaluations) or a mapping")
        if isinstance(value, int):
            return Budget(max_evaluations=value)
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"max_evaluations", "seconds"})
            if unknown:
                raise ValueError(f"unknown budget key(s) {unknown}; valid: max_evaluations, seconds")
            return Budget(**dict(value))
        raise TypeError(
            f"budget must be a Budget, an int (evaluations) or a mapping, got {type(value).__name__}"
        )


@dataclass(frozen=True)
class ShapeReport:
    """The best kernel at one benchmark shape, against PyTorch eager and torch.compile."""

    name: str
    params: dict[str, Any]
    kernel_ms: float | None
    eager_ms: float | None
    compile_ms: float | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    compile_error: str = ""  # why torch.compile has no time at this shape, where it failed


@dataclass(frozen=True)
class OptimizeResult:
    """What `optimize` found; `as_module()` gives the drop-in replacement."""

    spec: KernelSpec = field(repr=False)
    platform: str
    run_dir: Path
    results: dict[str, Any] = field(repr=False)
    best_id: str | None
    best_source: str | None = field(repr=False)
    backend: str | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    shapes: tuple[ShapeReport, ...]
    seed: int = 0
    reference: Any = field(default=None, repr=False, compare=False)  # the nn.Module instance optimised
    device: str | None = None  # where the example inputs lived

    @property
    def found(self) -> bool:
        return self.best_source is not None

    def model_class(self) -> type:
        """The winning `ModelNew` class (imported from its source)."""
        from kernelevolve.export.loader import load_kernel_class

        if self.best_source is None or self.backend is None:
            raise NoKernelFound(f"no correct kernel was found (see {self.run_dir / 'results.json'})")
        return load_kernel_class(self.best_source, self.backend, self._device())

    def _device(self) -> str:
        """Where the kernel runs: the CPU platform's CPU, else the module's (or inputs') GPU."""
        from kernelevolve.platforms import load_platform

        if load_platform(self.platform).device == "cpu":
            return "cpu"
        tensor = (
            next(iter(self.reference.state_dict().values()), None) if self.reference is not None else None
        )
        for device in (str(tensor.device) if tensor is not None else None, self.device):
            if device and device.startswith("cuda"):
                return device
        return "cuda"

    def as_module(self, device: str | None = None) -> torch.nn.Module:
        """An instance of the winning ModelNew, with the reference module's weights when names match.

        It serves the kernel at the searched shapes and the reference computation at others (a
        shape of a searched shape's bucket, the one a ranged spec recorded or else power-of-two, is
        tried on the kernel once, on its first call: `export.drop_in`); `.kernelevolve_dispatcher.calls`
        says which served each call.

        For an optimised nn.Module instance the weights are its own (copied), and its train/eval
        mode is kept; a ModelNew whose parameter names differ from the module's raises, since it
        could not compute with the module's weights. For a spec the reference is the spec's Model,
        built with the search's seed, as the harness builds it.
        """
        from kernelevolve.specs import reference

        cls = self.model_class()
        target = device or self._device()
        namespace = reference.load_reference(self.spec.reference_source)
        reference.apply_shape(namespace, self.spec.shapes[0])
        dtype = reference.torch_dtype(self.spec.dtype)
        model = reference.build_model(cls, namespace, self.seed, target, dtype)
        if self.reference is not None:
            state = self.reference.state_dict()
            strict = True
        else:
            state = reference.build_model(namespace.Model, namespace, self.seed, target, dtype).state_dict()
            strict = False
        mine = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        theirs = {k: tuple(v.shape) for k, v in state.items()}
        if mine == theirs:
            model.load_state_dict(state)
        elif strict and theirs:
            raise DropInError(
                f"the winning kernel's parameters {sorted(mine)} do not match the module's {sorted(theirs)}; "
                "it cannot carry the module's weights"
            )
        if self.reference is not None:
            model.train(self.reference.training)
        return self._served(model, namespace, target)

    def _served(self, model: torch.nn.Module, namespace: Any, device: str) -> torch.nn.Module:
        """`model` routed by input shapes: the kernel where it was checked, the reference elsewhere."""
        import copy

        from kernelevolve.export.drop_in import served_module
        from kernelevolve.specs import reference

        shapes = {s.name: s for s in self.spec.shapes}
        dtype = reference.torch_dtype(self.spec.dtype)

        def namespace_for(shape: str) -> Any:
            module = reference.load_reference(self.spec.reference_source)
            reference.apply_shape(module, shapes[shape])
            return module

        def reference_model(where: str) -> torch.nn.Module:
            if self.reference is not None:
                return copy.deepcopy(self.reference).to(where)
            return reference.build_model(namespace.Model, namespace, self.seed, where, dtype)

        return served_module(model, self.spec, device.split(":")[0], namespace_for, reference_model)

    def custom_op(self, **options: Any) -> Any:
        """The run's winners as a `torch.library` custom op (see `kernelevolve.export.custom_op.KernelOp`)."""
        from kernelevolve.export.custom_op import KernelOp

        return KernelOp.from_run(self.run_dir, **options)


# ------------------------------------------------------------------------------------------ config


def compose_config(
    platform: str = "cpu", search: str = "greedy", overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """conf/config.yaml + groups with Hydra overrides, as the CLI composes it, as a plain dict.

    `platform="auto"` is this machine's platform (`platforms.detect_platform`)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from kernelevolve.app import ConfigError
    from kernelevolve.platforms import PlatformError, resolve_platform_name

    try:
        platform = resolve_platform_name(platform)  # "auto": this machine's GPU by name, or cpu
    except PlatformError as exc:
        raise ConfigError(str(exc)) from exc
    for group, value in (("platform", platform), ("search", search)):
        valid = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
        if value not in valid:
            raise ConfigError(f"unknown {group} {value!r}; valid: {', '.join(valid)}")
    args = [f"platform={platform}", f"search={search}", *overrides]
    # Called from inside a Hydra app (which holds the global Hydra), compose ours, then give it back.
    outer = GlobalHydra.instance().hydra
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=args)
    except Exception as exc:  # Hydra's messages name the bad override and the valid options
        raise ConfigError(f"cannot compose the configuration with overrides {args}: {exc}") from exc
    finally:
        GlobalHydra.instance().hydra = outer
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    return plain


def apply_spec_overrides(spec: KernelSpec, overrides: Mapping[str, Any] | None) -> KernelSpec:
    """`spec` with some fields replaced (`SPEC_OVERRIDE_KEYS`); shapes as ShapeCases or mappings."""
    if not overrides:
        return spec
    unknown = sorted(set(overrides) - set(SPEC_OVERRIDE_KEYS))
    if unknown:
        raise ValueError(f"unknown spec override(s) {unknown}; valid: {', '.join(SPEC_OVERRIDE_KEYS)}")
    changes = dict(overrides)
    if "shapes" in changes:
        changes["shapes"] = tuple(
            s
            if isinstance(s, ShapeCase)
            else ShapeCase(str(s.get("name", f"shape{i}")), {k: v for k, v in s.items() if k != "name"})
            for i, s in enumerate(changes["shapes"])
        )
    for key in ("backends", "tags"):
        if key in changes:
            changes[key] = tuple(changes[key])
    return dataclasses.replace(spec, **changes)


def _plain_lists(value: Any) -> Any:
    return [_plain_lists(v) for v in value] if isinstance(value, (tuple, list)) else value


def write_spec_file(spec: KernelSpec, folder: Path) -> Path:
    """`spec` as a spec YAML file (inline reference, `shapes` only: used as given on every platform)."""
    data = {
        "name": spec.name,
        "description": spec.description,
        "reference_code": spec.reference_source,
        "dtype": spec.dtype,
        "atol": spec.atol,
        "rtol": spec.rtol,
        "backends": list(spec.backends),
        "tags": list(spec.tags),
        "shapes": [
            {"name": s.name, **{k: _plain_lists(v) for k, v in s.params.items()}} for s in spec.shapes
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec.name}-{spec.key}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _spec_argument(
    target: Any,
    example_inputs: Any,
    platform: str,
    init_inputs: Sequence[Any] | None,
    more_inputs: Sequence[Any],
    spec_overrides: Mapping[str, Any] | None,
    spec_dir: Path,
    config: Mapping[str, Any],
) -> str:
    """What goes into the config's `spec`: the user's string as is, or a spec file we write."""
    import torch

    is_module = isinstance(target, torch.nn.Module) or (
        isinstance(target, type) and issubclass(target, torch.nn.Module)
    )
    if not is_module and (example_inputs is not None or init_inputs is not None or more_inputs):
        raise ValueError("example_inputs, init_inputs and more_inputs apply to nn.Module targets only")
    if is_module:
        from kernelevolve.specs.module_spec import module_spec

        if example_inputs is None:
            raise ValueError(
                f"optimizing {getattr(target, '__name__', type(target).__name__)} needs example_inputs"
            )
        spec = module_spec(target, example_inputs, init_inputs=init_inputs, more_inputs=more_inputs)
    elif isinstance(target, KernelSpec):
        spec = target
    elif isinstance(target, (str, Path)):
        if not spec_overrides:
            return str(target)
        from kernelevolve.platforms import load_platform
        from kernelevolve.specs.loading import resolve_spec

        spec = resolve_spec(str(target), load_platform(platform), config)
    else:
        raise TypeError(
            "optimize() takes a KernelSpec, a spec name/path string, or an nn.Module instance or class; "
            f"got {type(target).__name__}"
        )
    return str(write_spec_file(apply_spec_overrides(spec, spec_overrides), spec_dir))


def _example_device(example_inputs: Any) -> str | None:
    import torch

    values = [example_inputs] if isinstance(example_inputs, torch.Tensor) else list(example_inputs or ())
    return next((str(v.device) for v in values if isinstance(v, torch.Tensor)), None)


# ------------------------------------------------------------------------------------------ optimize


def optimize(
    target: Any,
    example_inputs: Any = None,
    *,
    platform: str = "cpu",
    budget: Budget | int | Mapping[str, Any] | None = None,
    search: str = "greedy",
    init_inputs: Sequence[Any] | None = None,
    more_inputs: Sequence[Any] = (),
    spec_overrides: Mapping[str, Any] | None = None,
    operators: Sequence[str] | None = None,
    run_root: Path | str = "runs",
    run_name: str | None = None,
    seed: int = 0,
    overrides: Sequence[str] = (),
    progress: bool = False,
    store: Path | str | bool = True,
) -> OptimizeResult:
    """Search for a faster kernel for `target` and return what was found.

    target: a KernelSpec; a spec name, spec file path or ``kernelbench:L/ID`` string; or an
        nn.Module instance or class, with `example_inputs` (a tensor or a tuple of forward's
        positional arguments; their shapes and dtypes become the benchmark shape). `init_inputs`
        are the constructor's arguments (inferred from an instance's attributes when omitted);
        `more_inputs` lists further example argument tuples, one benchmark shape each.
    budget: a Budget, an int (evaluations), or {"max_evaluations": .., "seconds": ..}; a limit
        left out is off. None keeps the config's limits.
    spec_overrides: name, description, dtype, atol, rtol, backends, tags, shapes.
    operators: variation operators to use (default: the search config's list).
    overrides: any further Hydra overrides, e.g. ["platform.eval.timing_trials=20", "llm=openai"].
    store: where the run's winners are recorded for `kernelevolve.lookup`: True, the default artifact
        store (in the cache folder); a path, that SQLite file; False, nowhere.
    """
    from kernelevolve.app import run_search

    cfg = compose_config(platform, search, overrides)
    platform = str(cfg["platform"]["name"])  # "auto" resolved
    root = Path(run_root)
    cfg["spec"] = _spec_argument(
        target,
        example_inputs,
        platform,
        init_inputs,
        more_inputs,
        spec_overrides,
        root / "_specs",
        cfg,
    )
    cfg["seed"] = seed
    cfg["progress"] = progress
    cfg["run"] = {**(cfg.get("run") or {}), "root": str(root), "name": run_name}
    limits = Budget.of(budget)
    if limits is not None:
        termination = cfg["search"].setdefault("termination", {})
        termination["max_evaluations"] = limits.max_evaluations
        termination["wall_clock_s"] = limits.seconds
    if operators is not None:
        cfg["search"]["operators"] = list(operators)
    result = run_search(cfg)
    import torch

    if store is not False and (result.run_dir / "results.json").is_file():
        from kernelevolve.export.store import ArtifactStore

        added = ArtifactStore(None if store is True else Path(store)).add_run(result.run_dir)
        log.info("artifact store: %s", ", ".join(a.shape for a in added) or "nothing new")
    instance = target if isinstance(target, torch.nn.Module) else None
    return result_from_run(
        result.run_dir, seed=seed, reference=instance, device=_example_device(example_inputs)
    )


def result_from_run(
    run_dir: Path | str, *, seed: int | None = None, reference: Any = None, device: str | None = None
) -> OptimizeResult:
    """An OptimizeResult for a finished run directory (spec.json, results.json, graph.jsonl)."""
    from kernelevolve.search.graph import SearchGraph

    run = Path(run_dir)
    spec = KernelSpec.from_json(json.loads((run / "spec.json").read_text()))
    results = json.loads((run / "results.json").read_text())
    if seed is None:
        config_file = run / "config.json"
        seed = int(json.loads(config_file.read_text()).get("seed", 0)) if config_file.is_file() else 0
    best = results.get("best") or {}
    source = None
    if best:
        node = SearchGraph.load(run / "graph.jsonl").node(best["id"])
        source = node.candidate.source
    params = {s.name: dict(s.params) for s in spec.shapes}
    shapes = tuple(
        ShapeReport(
            name=row["shape"],
            params=params.get(row["shape"], {}),
            kernel_ms=row.get("best_ms"),
            eager_ms=row.get("eager_ms"),
            compile_ms=row.get("compile_ms"),
            speedup_vs_eager=row.get("speedup_vs_eager"),
            speedup_vs_compile=row.get("speedup_vs_compile"),
            compile_error=((results.get("baselines") or {}).get(row["shape"]) or {}).get("compile_error")
            or "",
        )
        for row in best.get("shapes", [])
    )
    return OptimizeResult(
        spec=spec,
        platform=str(results["platform"]),
        run_dir=run,
        results=results,
        best_id=best.get("id"),
        best_source=source,
        backend=best.get("backend"),
        speedup_vs_eager=best.get("speedup_vs_eager"),
        speedup_vs_compile=best.get("speedup_vs_compile"),
        shapes=shapes,
        seed=seed,
        reference=reference,
        device=device,
    )
