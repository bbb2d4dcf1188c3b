#!/usr/bin/env bash
# The test command: set-up, then lint, format check, type check and the test suite (GPU tests skip
# without CUDA) in KERNELEVOLVE_TEST_WORKERS processes (pytest-xdist; default 2, CI's cores; 0 runs them in
# this process). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
py="${KERNELEVOLVE_VENV:-.venv}/bin/python"
"$py" -m ruff check kernelevolve tests
"$py" -m ruff format --check kernelevolve tests
"$py" -m mypy
"$py" -m pytest -q -n "${KERNELEVOLVE_TEST_WORKERS:-2}" "$@"
