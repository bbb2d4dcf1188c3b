"""`kernelevolve +spec=<spec> platform=<name>` (or `python -m kernelevolve`): Hydra composition, nothing
else. The overrides are composed and checked first (kernelevolve.config), so a mistake is one line on
stderr before Hydra makes a run directory; then Hydra runs the search in `hydra.run.dir`."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from kernelevolve.config import command_line_error
from kernelevolve.paths import CONF_DIR


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def _search(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from kernelevolve.app import ConfigError, print_summary, run_search
    from kernelevolve.platforms import PlatformError
    from kernelevolve.registry import UnknownNameError
    from kernelevolve.specs.loading import SpecError

    try:
        result = run_search(cfg, run_dir=Path(HydraConfig.get().runtime.output_dir))
    except (ConfigError, SpecError, PlatformError, UnknownNameError) as exc:
        logging.getLogger("kernelevolve").error("error: %s", exc)
        sys.exit(2)
    print_summary(result)
    if cfg.get("store", True):
        _add_to_store(result.run_dir)


def _add_to_store(run_dir: Path) -> None:
    """The winners go where `kernelevolve.lookup` looks; a store that cannot be written costs a warning."""
    from kernelevolve.export.store import ArtifactStore, StoreError

    log = logging.getLogger("kernelevolve")
    try:
        added = ArtifactStore().add_run(run_dir)
    except (StoreError, OSError) as exc:
        log.warning("artifact store: not updated (%s)", exc)
        return
    log.info("artifact store: %s", ", ".join(a.shape for a in added) or "nothing new")


def _resolve_auto_platform(argv: list[str]) -> str | None:
    """`platform=auto` becomes this machine's platform before Hydra picks the config group; an error
    (a GPU no platform names) comes back as its line."""
    from kernelevolve.platforms import AUTO, PlatformError, resolve_platform_name

    for i, arg in enumerate(argv):
        if arg == f"platform={AUTO}":
            try:
                argv[i] = f"platform={resolve_platform_name(AUTO)}"
            except PlatformError as exc:
                return str(exc)
    return None


def main() -> None:
    """The `kernelevolve` console script."""
    error = _resolve_auto_platform(sys.argv) or command_line_error(sys.argv[1:])
    if error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    _search()


if __name__ == "__main__":
    main()
