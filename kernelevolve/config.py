"""Structured configs: the schema of conf/ as dataclasses in Hydra's ConfigStore, and the checks a
configuration passes before any work starts.

conf/config.yaml names the schema first in its defaults list, so Hydra types every key it composes: a
word where a number goes, or a key that does not exist, fails at composition with the key named. Sections
whose keys depend on a choice (evaluator local/ray, llm, a spec source's section such as kernelbench) are
open mappings there; `validate` checks them, and ranges no type can express, once the config is composed.

Importing this module registers the schema and the run-directory resolver; whoever composes conf/ imports
it first (`compose` here does).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from kernelevolve.types import EvalSettings

SCHEMA_NAME = "kernelevolve_schema"
KB_ENABLED = ("auto", True, False)


class ConfigError(ValueError):
    """A configuration that cannot run; the message names the key, what is wrong and the valid values."""


# ------------------------------------------------------------------------------------------- schema
# EvalSettings less `seed` and `strict` (top-level keys): one field list, so the two never drift apart.
EvalConfig = dataclasses.make_dataclass(
    "EvalConfig",
    [
        (f.name, get_type_hints(EvalSettings)[f.name], field(default=f.default))
        for f in dataclasses.fields(EvalSettings)
        if f.name not in ("seed", "strict")
    ],
)


@dataclass
class PlatformConfig:
    name: str = "cpu"  # platforms/<name>.yaml holds its hardware facts
    devices: list[str] | None = None  # null: every visible GPU
    eval: EvalConfig = field(default_factory=EvalConfig)  # type: ignore[valid-type]


@dataclass
class PlateauConfig:
    patience: int = 20
    min_relative_gain: float = 0.01


@dataclass
class TerminationConfig:
    max_evaluations: int | None = None
    wall_clock_s: float | None = None
    plateau: PlateauConfig | None = None
    target_speedup: float | None = None
    cost_budget_usd: float | None = None
    proposals_exhausted: bool = True


@dataclass
class SearchConfig:
    policy: str = "greedy"
    options: dict[str, Any] = field(default_factory=dict)  # the policy's own settings
    operators: list[str] = field(default_factory=list)
    operator_options: dict[str, Any] = field(default_factory=dict)  # operator name -> its settings
    scheduler: str = "ucb"
    proposal_concurrency: int = 2
    children_per_proposal: int = 2
    include_compile_only_backends: bool = False
    proposal_drain_s: float | None = None  # null: the engine's default
    termination: TerminationConfig = field(default_factory=TerminationConfig)


@dataclass
class RunConfig:
    root: str = "runs"  # the default hydra.run.dir is <root>/<name>
    name: str | None = None  # null: <spec>-<platform>-<timestamp>


@dataclass
class KBConfig:
    enabled: Any = "auto"  # auto | true | false
    record_past_wins: bool = True
    cache_dir: str | None = None


@dataclass
class Config:
    seed: int = 0
    resume: str | None = None
    strict: bool = True
    progress: bool = True
    store: bool = True
    run: RunConfig = field(default_factory=RunConfig)
    platform: PlatformConfig = field(default_factory=PlatformConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    kb: KBConfig = field(default_factory=KBConfig)
    # open sections, checked by `validate`: their keys depend on the option chosen
    evaluator: dict[str, Any] = field(default_factory=dict)
    llm: dict[str, Any] = field(default_factory=dict)
    kernelbench: dict[str, Any] = field(default_factory=dict)


@dataclass
class LocalEvaluatorConfig:
    name: str = "local"
    workers_per_device: int | None = None


@dataclass
class RayEvaluatorConfig:
    name: str = "ray"
    address: str | None = None
    num_actors: int | None = None
    accelerator_type: str | None = None
    resources: dict[str, float] = field(default_factory=dict)
    workers_per_actor: int | None = None
    max_in_flight_per_actor: int | None = None
    max_restarts: int = 3
    cpu_compile_workers: int = 0
    num_gpus_per_actor: float | None = None
    num_cpus_per_actor: float = 1.0
    max_replacements: int = 3


EVALUATORS: dict[str, type] = {"local": LocalEvaluatorConfig, "ray": RayEvaluatorConfig}


def slug(text: str) -> str:
    """A spec argument as part of a folder name: `kernelbench:1/23` -> `kernelbench-1-23`, `a/op.yaml` -> `op`."""
    text = str(text or "").strip()
    if text.endswith((".yaml", ".yml")):
        text = Path(text).stem
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-") or "run"


def run_dir_name(resume: Any, root: Any, name: Any, spec: Any, platform: Any, stamp: Any) -> str:
    """hydra.run.dir by default: the run resumed, else <run.root>/<run.name or spec-platform-time>."""
    if resume:
        return str(resume)
    return str(Path(str(root)) / (str(name) if name else f"{slug(spec)}-{platform}-{stamp}"))


def register() -> None:
    """The schema into Hydra's ConfigStore and the `ke.*` resolvers into OmegaConf (idempotent)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    ConfigStore.instance().store(name=SCHEMA_NAME, node=Config)
    if not OmegaConf.has_resolver("ke.run_dir"):
        OmegaConf.register_new_resolver("ke.run_dir", run_dir_name, use_cache=True)
        OmegaConf.register_new_resolver("ke.slug", slug)


register()


# -------------------------------------------------------------------------------------- validation
def _fail(key: str, value: Any, wanted: str) -> ConfigError:
    return ConfigError(f"{key}={value!r}: {wanted}")


def _typed(section: Mapping[str, Any], schema: type, where: str) -> None:
    """`section` merged into `schema` (a dataclass): unknown keys and wrong types named, one line."""
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    try:
        OmegaConf.merge(OmegaConf.structured(schema), dict(section))
    except (ConfigAttributeError, ConfigKeyError) as exc:
        valid = ", ".join(f.name for f in dataclasses.fields(schema))
        raise ConfigError(f"unknown setting {where}.{exc.full_key}; valid under {where}: {valid}") from None
    except OmegaConfBaseException as exc:
        key = f"{where}.{exc.full_key}" if getattr(exc, "full_key", None) else where
        raise ConfigError(f"{key}: {str(exc).splitlines()[0]}") from None


def eval_settings(cfg: Mapping[str, Any]) -> EvalSettings:
    """The harness settings of a composed config (platform.eval, seed, strict), ranges checked."""
    options = dict(cfg["platform"].get("eval") or {})
    valid = [f.name for f in dataclasses.fields(EvalSettings) if f.name not in ("seed", "strict")]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(f"platform.eval has unknown key(s) {unknown}; valid: {', '.join(valid)}")
    try:
        return EvalSettings(seed=cfg.get("seed", 0), strict=bool(cfg.get("strict", True)), **options)
    except ValueError as exc:
        raise ConfigError(f"platform.eval.{exc}") from None


def _check_search(search: Mapping[str, Any]) -> None:
    from kernelevolve.registry import UnknownNameError
    from kernelevolve.search.selection import build_selection
    from kernelevolve.search.termination import build_termination
    from kernelevolve.variation import OPERATORS, load_entry_points
    from kernelevolve.variation.scheduler import STRATEGIES

    try:
        build_selection(str(search["policy"]), **dict(search.get("options") or {}))
    except (UnknownNameError, ValueError, TypeError) as exc:
        raise ConfigError(f"search.policy={search['policy']!r} (search.options): {exc}") from None
    load_entry_points()
    unknown = [name for name in search.get("operators") or () if name not in OPERATORS.names()]
    if unknown:
        valid = ", ".join(OPERATORS.names())
        raise _fail("search.operators", unknown, f"unknown operator(s); valid: {valid}")
    if search.get("scheduler") not in STRATEGIES:
        raise _fail("search.scheduler", search.get("scheduler"), f"valid: {', '.join(STRATEGIES)}")
    for key in ("proposal_concurrency", "children_per_proposal"):
        if int(search[key]) < 1:
            raise _fail(f"search.{key}", search[key], "an integer >= 1")
    drain = search.get("proposal_drain_s")
    if drain is not None and drain < 0:
        raise _fail("search.proposal_drain_s", drain, "seconds >= 0, or null for the default")
    try:
        build_termination(dict(search.get("termination") or {}))
    except ValueError as exc:
        raise ConfigError(f"search.termination: {exc}") from None


def validate(cfg: Mapping[str, Any]) -> EvalSettings:
    """Every check that needs no spec and no device: the platform, harness settings, search, evaluator
    and knowledge-base sections (the llm section is the LLM operator's to check, when it is built).
    ConfigError, one line, on the first problem; the run's EvalSettings otherwise."""
    from kernelevolve.platforms import PlatformError, load_platform

    try:
        load_platform(str(cfg["platform"]["name"]))
    except PlatformError as exc:
        raise ConfigError(f"platform.name: {exc}") from None
    settings = eval_settings(cfg)
    _check_search(cfg["search"])
    evaluator = dict(cfg.get("evaluator") or {"name": "local"})
    name = evaluator.get("name", "local")
    if name not in EVALUATORS:
        raise _fail("evaluator.name", name, f"valid: {', '.join(EVALUATORS)}")
    _typed(evaluator, EVALUATORS[name], "evaluator")
    enabled = (cfg.get("kb") or {}).get("enabled", "auto")
    if enabled not in KB_ENABLED:
        raise _fail("kb.enabled", enabled, "valid: auto, true, false")
    return settings


# ------------------------------------------------------------------------------------- composition
def compose(overrides: Sequence[str] = (), return_hydra_config: bool = False) -> Any:
    """conf/config.yaml with `overrides`, as the command line composes it (an OmegaConf DictConfig)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from kernelevolve.paths import CONF_DIR

    outer = GlobalHydra.instance().hydra  # called inside a Hydra app: compose ours, then give it back
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return hydra_compose("config", overrides=list(overrides), return_hydra_config=return_hydra_config)
    finally:
        GlobalHydra.instance().hydra = outer


def to_plain(cfg: Any) -> dict[str, Any]:
    """A composed DictConfig as a plain, resolved dict (the rest of the package never sees OmegaConf)."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(cfg, DictConfig):
        plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
        return plain
    return dict(cfg)


# ------------------------------------------------------------------------------------ command line
def command_line_error(argv: Sequence[str]) -> str | None:
    """What is wrong with a command line's overrides, in one line, found by composing and validating
    them before Hydra starts the run (so a mistake leaves no run directory); None where nothing is.
    Hydra's flags (--help, -m, --cfg...) and hydra.* overrides are left to Hydra."""
    if any(arg.startswith("-") for arg in argv):
        return None
    overrides = [  # hydra.searchpath may add config groups' options; the rest is Hydra's own business
        arg for arg in argv if not arg.lstrip("+~").startswith("hydra") or arg.startswith("hydra.searchpath=")
    ]
    try:
        plain = to_plain(compose(overrides))
    except Exception as exc:  # Hydra's composition and override errors, OmegaConf's type errors
        return _composition_error(exc, overrides)
    if not plain.get("spec") and not plain.get("resume"):
        return "no spec given: add +spec=<shipped name | path/to/op.yaml | kernelbench:LEVEL/ID>"
    try:
        validate(plain)
    except ConfigError as exc:
        return str(exc)
    return _spec_error(plain) or _run_dir_taken(plain, argv)


def _spec_error(plain: Mapping[str, Any]) -> str | None:
    """What is wrong with the spec's file or fields (its reference is run later, in the run)."""
    if plain.get("resume"):
        return None
    from kernelevolve.platforms import PlatformError, load_platform
    from kernelevolve.specs.loading import SpecError, resolve_spec

    try:
        platform = load_platform(str(plain["platform"]["name"]))
        resolve_spec(str(plain["spec"]), platform, plain, validate=False)
    except (SpecError, PlatformError) as exc:
        return str(exc)
    return None


def _run_dir_taken(plain: Mapping[str, Any], argv: Sequence[str]) -> str | None:
    """A named run directory that already holds a run, where this one would start afresh."""
    if plain.get("resume"):
        return None
    given = [arg.partition("=")[2] for arg in argv if arg.lstrip("+").startswith("hydra.run.dir=")]
    run = plain.get("run") or {}
    if given:
        folder = Path(given[-1])
    elif run.get("name"):
        folder = Path(str(run.get("root") or "runs")) / str(run["name"])
    else:
        return None  # a timestamped name
    if (folder / "graph.jsonl").is_file():
        return f"{folder} already holds a run: resume={folder} continues it; or choose another run directory"
    return None


def _composition_error(exc: Exception, overrides: Sequence[str]) -> str:
    from hydra.errors import MissingConfigException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    if isinstance(exc, MissingConfigException) and exc.options:
        group, _, option = str(exc.missing_cfg_file).rpartition("/")
        return f"{group}={option}: no such option; valid: {', '.join(exc.options)}"
    cause = exc.__cause__
    if isinstance(cause, (ConfigKeyError, ConfigAttributeError)) and getattr(cause, "full_key", None):
        key = str(cause.full_key)
        parent = key.rpartition(".")[0]
        valid = _keys_under(parent, overrides)
        where = f"under {parent}" if parent else "at the top level"
        return f"unknown setting {key}; valid {where}: {valid}" if valid else f"unknown setting {key}"
    if isinstance(cause, OmegaConfBaseException):
        override = first.removeprefix("Error merging override ").strip()
        return f"{override}: {str(cause).splitlines()[0]}"
    return first


def _keys_under(parent: str, overrides: Sequence[str]) -> str:
    """The keys of section `parent` in the config the group choices among `overrides` compose."""
    from omegaconf import DictConfig, OmegaConf

    from kernelevolve.paths import CONF_DIR

    groups = {p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name != "hydra"}
    choices = [o for o in overrides if o.partition("=")[0] in groups]
    try:
        node = compose(choices)
        node = OmegaConf.select(node, parent) if parent else node
    except Exception:
        return ""
    return ", ".join(sorted(str(k) for k in node)) if isinstance(node, DictConfig) else ""
