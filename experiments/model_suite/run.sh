#!/usr/bin/env bash
# The model suite (every shipped spec, operators/spec/) swept on one GPU in permissive mode, in calls that
# each end within 9 minutes; resumable: run the same command again until it says nothing is left. Each call
# appends to OUT and rewrites OUT/summary.md and summary.json: correctness, geomean speedups against eager
# and torch.compile, fast_p (fast_1 included), for strict (own kernels only; a spec solved only with library
# calls is library_only there) and permissive (library calls allowed).
#
#   bash experiments/model_suite/run.sh                  # one call; repeat until "0 left"
#   SUITE_DIR=runs/sweeps/model_suite PLATFORM=h200 BUDGET_EVALS=20 bash experiments/model_suite/run.sh
# On the device machine, where $OUT is the folder that comes back (emptied before each command), the
# sweep's folder is also packed there as <name>.tgz; unpacked here into .resume/ and carried, the next call
# resumes from it on a fresh machine too (experiments/device_state.sh).
#
# Settings (environment): SUITE_DIR (default runs/sweeps/model_suite), PLATFORM (h200), BUDGET_EVALS (12),
# BUDGET_SECONDS (40: search wall clock per spec; both as the KernelBench sample sweeps), PARALLEL (2 specs
# side by side on the GPU, each in a process of its own), TIME_LIMIT_S (360: no spec starts that the
# estimate says would end after it; a spec's estimate is BUDGET_SECONDS + 60 s, or the longest seen so far,
# so a call ends by about TIME_LIMIT_S + 180 s, with the quiet re-timing of host-bound baselines after it,
# under 9 minutes),
# SPECS (comma-separated names; default: every shipped spec without a `backward:`, i.e. the forward specs,
# not the training specs train_*), EXTRA (more sweep arguments, e.g. "--retry-failed").
# The CPU run recorded beside this script used: PLATFORM=cpu BUDGET_EVALS=6 BUDGET_SECONDS=120.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
[ -d .devpack/hydra/p1 ] && { bash .devpack/hydra/p1/install.sh >/dev/null 2>&1 || echo "hydra devpack: install failed" >&2; }
out=${SUITE_DIR:-runs/sweeps/model_suite}
source experiments/device_state.sh
restore_folder "$out"
mkdir -p "$out"
forward_specs=$(grep -L '^backward:' operators/spec/*.yaml | xargs -n1 basename | sed 's/\.yaml$//' | paste -sd, -)
started=$(date +%s)
set +e
# shellcheck disable=SC2086  # EXTRA is a list of arguments
"$python" -m kernelevolve.bench.sweep \
  --specs "${SPECS:-$forward_specs}" \
  --platform "${PLATFORM:-h200}" \
  --permissive \
  --budget-evals "${BUDGET_EVALS:-12}" \
  --budget-seconds "${BUDGET_SECONDS:-40}" \
  --parallel "${PARALLEL:-2}" --isolate \
  --baseline-allowance-s 60 \
  --time-limit-s "${TIME_LIMIT_S:-360}" \
  --out "$out" \
  --set kb.record_past_wins=false \
  ${EXTRA:-} 2>&1 | tee -a "$out/sweep.log" | grep -E "^(sweep|stopped|summary)|INFO: L0/[0-9]+ [a-z0-9_]+: [a-z_]+"
status=${PIPESTATUS[0]}
set -e
if [ -n "${OUT:-}" ]; then save_folder "$out"; cp "$out/summary.md" "$OUT/" 2>/dev/null; fi
echo "call took $(( $(date +%s) - started )) s (exit $status); full log: $out/sweep.log; table: $out/summary.md"
exit "$status"
