#!/usr/bin/env bash
# CLI searches over the shipped specs that allow CuTe (backends: [triton, cute]) on a GPU, then a table of
# the best verified kernel of each backend beside eager and torch.compile (results.json best_by_backend).
# Usage (device machine, repo root, CuTe DSL installed): bash experiments/cute_cli/run.sh <out dir>
# Env: PLATFORM (h200), SECONDS_PER_RUN (80), SPECS ("elementwise_chain softmax gemm_bias_relu").
set -uo pipefail
out="$1"; work="${WORK_DIR:-/tmp/kernelevolve_cute_cli}"
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
dirs=()
for spec in ${SPECS:-elementwise_chain softmax gemm_bias_relu}; do
  python3 -m kernelevolve "+spec=$spec" platform="${PLATFORM:-h200}" progress=false run.root="$work/runs" \
    run.name="$spec" search.termination.max_evaluations=200 \
    search.termination.wall_clock_s="${SECONDS_PER_RUN:-80}" >"$work/$spec.log" 2>&1
  echo "$spec rc=$?"; tail -n 2 "$work/$spec.log"
  cp "$work/runs/$spec/results.json" "$out/$spec.results.json" 2>/dev/null
  dirs+=("$work/runs/$spec")
done
python3 experiments/cute_cli/table.py "${dirs[@]}" | tee "$out/table.md"
