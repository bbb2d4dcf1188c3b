#!/usr/bin/env bash
# Set-up, idempotent: a virtual environment in .venv with a CPU build of torch and kernelevolve with its
# extras. Re-runs install only when pyproject.toml or this script changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${KERNELEVOLVE_VENV:-.venv}"
torch_spec="${KERNELEVOLVE_TORCH:-torch==2.13.0}"   # install the pinned build first: a bare `torch` pulls CUDA wheels
extras="${KERNELEVOLVE_EXTRAS:-dev,kb,llm,dist,report,cute}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
stamp="$venv/.kernelevolve-installed"
want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16) $torch_spec $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$torch_spec"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[$extras]"
  echo "$want" >"$stamp"
fi
