#!/usr/bin/env bash
# Evaluation throughput on a GPU: short LLM-free searches, then where each evaluation's time went.
# Usage (device machine, repo root): bash experiments/eval_throughput/run.sh <kernelbench jsonl> <out dir>
# Env: PLATFORM (h200), SECONDS_PER_RUN (45), RUNS ("softmax:softmax kernelbench:1/19:kb_L1_19_relu"),
#      EXTRA (more Hydra overrides, e.g. "evaluator.workers_per_device=3"), PROFILE (1; 0 skips the profile).
# Leaves in <out dir>: throughput.md (table of evaluations per minute and seconds per stage) and
# profile.txt (cProfile of the harness re-evaluating the first run's candidates in process).
set -uo pipefail
kb="$1"; out="$2"; seconds="${SECONDS_PER_RUN:-45}"
work="${WORK_DIR:-/tmp/kernelevolve_throughput}"
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
dirs=()
for item in ${RUNS:-softmax:softmax kernelbench:1/19:kb_L1_19_relu}; do
  name="${item##*:}"
  python3 -m kernelevolve "+spec=${item%:*}" platform="${PLATFORM:-h200}" progress=false run.root="$work/runs" \
    run.name="$name" kernelbench.path="$kb" search.termination.max_evaluations=400 \
    search.termination.wall_clock_s="$seconds" ${EXTRA:-} >"$work/$name.log" 2>&1
  echo "$name rc=$?"; tail -n 3 "$work/$name.log"
  dirs+=("$work/runs/$name")
done
python3 experiments/eval_throughput/summarise.py "${dirs[@]}" | tee "$out/throughput.md"
[ "${PROFILE:-1}" = 0 ] || timeout 120 python3 experiments/eval_throughput/profile_harness.py "${dirs[0]}" --limit 6 --out "$out/profile.txt" | head -n 20
