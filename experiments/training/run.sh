#!/usr/bin/env bash
# Issue 41 on the H200: the eight shipped training specs (train_*) searched forward + backward, LLM-free
# (templates, torch.compile's joint-graph seeds, tuning of each pass), in strict and permissive mode; then
# the baselines' passes apart and a table of speedups over eager and torch.compile for the pair.
# Usage (device machine, repo root): bash experiments/training/run.sh <out dir>
# Env: PLATFORM (h200), SPECS (the eight), MODES ("strict permissive"), EVALS (20), SECONDS_PER_RUN (180),
# JOBS (2 runs side by side),
# DEADLINE_S (none: no run starts after this many seconds from the call's start, so the baselines' table and
# the summary still come back inside a device call's limit).
# Leaves in <out dir>: summary.md (ours), passes.md (eager / torch.compile, forward and forward + backward),
# logs.txt (each run's tail) and runs.tar.gz (results.json, graph.jsonl, best kernel of every run).
set -uo pipefail
out="$1"; work="${WORK_DIR:-runs/training}"
specs="${SPECS:-train_rmsnorm train_layernorm train_swiglu train_gelu_mlp train_rope train_softmax_ce train_fused_linear_ce train_attention}"
# Sixteen runs span several device calls: the work folder is packed into $OUT as training.tgz each call and,
# unpacked here into .resume/ and carried, restored on a fresh machine (experiments/device_state.sh); a run
# that finished (its results.json) is not run again.
source experiments/device_state.sh
restore_folder "$work"
mkdir -p "$out" "$work"
bash .devpack/hydra/p1/install.sh >/dev/null 2>&1 || echo "hydra devpack: not installed (the CLI needs it)" >&2
began=$(date +%s)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
git rev-parse HEAD | tee -a "$out/device.txt"
one_run() {  # spec mode: one search, its log and its line in walls.txt
  local spec=$1 mode=$2 name="$1_$2" start
  start=$(date +%s)
  python3 -m kernelevolve "+spec=$spec" platform="${PLATFORM:-h200}" strict="$([ "$mode" = strict ] && echo true || echo false)" \
    progress=false run.root="$work/runs" run.name="$name" 'search.operators=[template,compiler_seed,tune]' \
    search.termination.max_evaluations="${EVALS:-20}" search.termination.wall_clock_s="${SECONDS_PER_RUN:-180}" \
    >"$work/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc wall_s=$(( $(date +%s) - start ))" | tee -a "$work/walls.txt"
  { echo "===== $name (rc=$rc)"; tail -n 20 "$work/$name.log"; } >>"$out/logs.txt"
}
# JOBS runs side by side: each search compiles on the host while another's evaluation holds the GPU (the
# device lock keeps timed calls alone on it), so two at once take about half the wall clock.
for spec in $specs; do
  for mode in ${MODES:-strict permissive}; do
    name="${spec}_${mode}"
    if [ -f "$work/runs/$name/results.json" ]; then echo "$name done in an earlier call"; continue; fi
    while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-2}" ]; do wait -n; done
    if [ -n "${DEADLINE_S:-}" ] && [ $(( $(date +%s) - began )) -ge "$DEADLINE_S" ]; then
      echo "$name skipped: past DEADLINE_S" | tee -a "$work/walls.txt"; continue
    fi
    one_run "$spec" "$mode" &
  done
done
wait
PYTHONPATH=. python3 experiments/training/passes.py $specs | tee "$out/passes.md"
python3 experiments/training/summarise.py "$work" | tee "$out/summary.md"
tar czf "$out/runs.tar.gz" -C "$work" runs walls.txt
[ -n "${OUT:-}" ] && save_folder "$work" with-runs
