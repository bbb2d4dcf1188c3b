"""`python -m kernelevolve.bench.sweep ...`: the sweep's command line (`cli.py`)."""

import sys

from kernelevolve.bench.sweep.cli import main

if __name__ == "__main__":
    sys.exit(main())
