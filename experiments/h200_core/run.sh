#!/usr/bin/env bash
# Issue "core loop" on the H200: the CLI on 3 shipped specs and 3 KernelBench level-1 problems,
# LLM-free, then a table of best/eager/compile ms, evaluations and wall time.
# Usage (device machine, repo root): bash experiments/h200_core/run.sh <kernelbench problems.jsonl> <out dir>
# Leaves in <out dir>: summary.md, logs.txt and runs.tar.gz (results.json, best kernel, graph of every run).
set -uo pipefail
kb="$1"; out="$2"; budget_evals="${BUDGET_EVALS:-16}"; budget_s="${BUDGET_S:-55}"
work="${WORK_DIR:-/tmp/kernelevolve_core}"
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
run() {  # $1 = spec argument, $2 = run name
  local start=$(date +%s)
  python3 -m kernelevolve "+spec=$1" platform="${PLATFORM:-h200}" progress=false run.root="$work/runs" run.name="$2" \
    kernelbench.path="$kb" search.termination.max_evaluations="$budget_evals" \
    search.termination.wall_clock_s="$budget_s" >"$work/$2.log" 2>&1
  local rc=$?
  echo "$2 rc=$rc wall_s=$(( $(date +%s) - start ))" | tee -a "$work/walls.txt"
  { echo "===== $2 (rc=$rc)"; tail -n 25 "$work/$2.log"; } >>"$out/logs.txt"
}
for item in ${RUNS:-softmax:softmax rmsnorm:rmsnorm layernorm:layernorm kernelbench:1/23:kb_L1_23_softmax kernelbench:1/30:kb_L1_30_softsign kernelbench:1/36:kb_L1_36_rmsnorm}; do
  run "${item%:*}" "${item##*:}"
done
python3 experiments/h200_core/summarise.py "$work" | tee "$out/summary.md"
tar czf "$out/runs.tar.gz" -C "$work" runs walls.txt
