"""`python -m kernelevolve +spec=<spec> platform=<name>`: Hydra composition, nothing else."""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig

from kernelevolve.paths import CONF_DIR


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from kernelevolve.app import ConfigError, print_summary, run_search
    from kernelevolve.platforms import PlatformError
    from kernelevolve.registry import UnknownNameError
    from kernelevolve.specs.loading import SpecError

    try:
        result = run_search(cfg)
    except (ConfigError, SpecError, PlatformError, UnknownNameError) as exc:
        logging.getLogger("kernelevolve").error("%s", exc)
        sys.exit(2)
    print_summary(result)


if __name__ == "__main__":
    main()
