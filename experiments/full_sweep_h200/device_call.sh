#!/usr/bin/env bash
# One device call of the full sweep, resuming from runs/sweeps/full (carried in, or seeded from here).
# Usage on the device: bash experiments/full_sweep_h200/device_call.sh CALL_NAME TIME_LIMIT_S [CONV_PROBLEMS...]
# With CONV_PROBLEMS, conv_bench measures them on the last GPU while the sweep runs on the others, so all
# stay busy and neither measurement shares its GPU with the other; on a one-GPU machine conv_bench runs
# first, alone, for CONV_TIME_S (default half the time limit), and the sweep after it.
# Carry: .devpack/ray/p2 (after .devpack/ray/p1 in the call before), .devpack/einops/p1, .kbdata, runs/sweeps/full.
# SWEEP_ARGS adds sweep arguments (a later --levels/--ids replaces the script's), e.g. a re-run of stale results:
#   SWEEP_ARGS="--levels 1 --rerun-before 2026-11-30T05:00:00+00:00"
# CONV_VARIANTS="CONV_LOOP=taps,CONV_FP32_PRECISION=bf16x3 ..." replaces conv_bench's default variants;
# CONV_ARGS="--library" measures cuDNN's convolution's tunables instead (LIBRARY_CONV_BENCHMARK off/on).
# PREFLIGHT="tests/a.py tests/b.py" runs those files' GPU tests first and skips the sweep if they fail, so
# code never run on a GPU cannot spend a whole call.
# SWEEP_NAME=h200_sample4 sweeps into runs/sweeps/h200_sample4 instead (carried the same way; started empty),
# with the same settings, e.g. the sample sweep: SWEEP_ARGS="--sample experiments/sweep_sample.md".
set -u
started=$(date +%s)
call_name=$1
time_limit_s=$2  # no problem starts past it (the preflight's time comes off); OVERRUN_S (120) more cuts the sweep
shift 2
out=${OUT:?OUT must name the folder that comes back}

bash .devpack/ray/p2/install.sh >/dev/null 2>&1 || echo "ray/hydra devpack: install failed" >&2
[ -d .devpack/einops/p1 ] && { bash .devpack/einops/p1/install.sh >/dev/null 2>&1 || echo "einops devpack: install failed" >&2; }
sweep_name=${SWEEP_NAME:-full}
sweep_dir=runs/sweeps/$sweep_name
if [ "$sweep_name" = full ]; then
  [ -d "$sweep_dir" ] || { mkdir -p runs/sweeps && cp -r experiments/full_sweep_h200 "$sweep_dir"; }
  # A carried folder older than the committed records would return a tarball without them (the fifteenth
  # session carried one from before calls 30-32): every committed line must be in the carried file.
  if ! python3 - "$sweep_dir/results.jsonl" experiments/full_sweep_h200/results.jsonl <<'PY'
import sys
carried = set(open(sys.argv[1]).read().splitlines())
missing = [line for line in open(sys.argv[2]).read().splitlines() if line not in carried]
if missing:
    print(f"{sys.argv[1]} lacks {len(missing)} of the committed records: refresh it from experiments/full_sweep_h200")
sys.exit(1 if missing else 0)
PY
  then
    echo "no sweep this call"
    exit 0
  fi
fi

if [ -n "${PREFLIGHT:-}" ]; then
  # shellcheck disable=SC2086  # a list of test files
  if ! KERNELBENCH_PATH=.kbdata/problems.jsonl python3 -m pytest -m gpu $PREFLIGHT -q -x -p no:cacheprovider -rs \
      > "$out/preflight.log" 2>&1; then
    tail -n 40 "$out/preflight.log"
    echo "preflight failed: no sweep this call"
    exit 0
  fi
  tail -n 3 "$out/preflight.log"
fi
time_limit_s=$((time_limit_s - ($(date +%s) - started)))

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -ge 1 ] || gpus=1
sweep_gpus=$(seq -s, 0 $((gpus - 1)))
conv_pid=
if [ $# -gt 0 ]; then
  mkdir -p "$out/conv_bench"
  conv_limit_s=$time_limit_s
  # one GPU: conv_bench first, alone, for CONV_TIME_S (default half the limit), then the sweep
  [ "$gpus" -ge 2 ] || conv_limit_s=${CONV_TIME_S:-$((time_limit_s / 2))}
  conv_gpu=$((gpus - 1))
  run_conv_bench() {
    # its results say per variant whether the kernel compiled and matched; PREFLIGHT can test first
    CUDA_VISIBLE_DEVICES=$conv_gpu PYTHONUNBUFFERED=1 timeout $((conv_limit_s + 40)) python3 -m kernelevolve.bench.sweep.conv_bench \
      --platform h200 --kernelbench-path .kbdata/problems.jsonl --out "$out/conv_bench" \
      --time-limit-s "$conv_limit_s" --eval timeout_s=90 --problems "$@" ${CONV_VARIANTS:+--variants $CONV_VARIANTS} \
      ${CONV_ARGS:-} > "$out/conv_bench.log" 2>&1
  }
  if [ "$gpus" -ge 2 ]; then
    sweep_gpus=$(seq -s, 0 $((gpus - 2)))
    run_conv_bench "$@" &
    conv_pid=$!
  else
    conv_started=$(date +%s)
    run_conv_bench "$@"
    echo "conv_bench exit $?"
    time_limit_s=$((time_limit_s - ($(date +%s) - conv_started)))
  fi
fi

# The sweep's limit only stops new problems from starting; a level-3 problem can run 130 s past it, so
# a hard cut keeps the tarball below from being lost to the call's own limit (finished results are files).
CUDA_VISIBLE_DEVICES=$sweep_gpus timeout -k 10 $((time_limit_s + ${OVERRUN_S:-120})) python3 -m kernelevolve.bench.sweep --kernelbench-path .kbdata/problems.jsonl \
  --levels 1 2 3 --platform h200 --budget-evals 12 --budget-seconds 40 --baseline-allowance-s 45 \
  --out "$sweep_dir" --time-limit-s "$time_limit_s" --retry-failed --evaluator ray \
  --set +evaluator.num_gpus_per_actor=0.5 --permissive ${SWEEP_ARGS:-} > "$out/$call_name.log" 2>&1
echo "sweep exit $?"
[ -n "$conv_pid" ] && { wait "$conv_pid"; echo "conv_bench exit $?"; }
# Back: the sweep folder without caches and run folders, but with the run folders of problems cut off in
# flight (no result, or a re-run whose folder changed after its old result), so the next call resumes them
# from their checkpoints.
kept=()
for path in "$sweep_dir"/*; do
  [ -e "$path" ] || continue
  case "$(basename "$path")" in caches|runs) ;; *) kept+=("$sweep_name/$(basename "$path")") ;; esac
done
for run in "$sweep_dir"/runs/*/; do
  [ -d "$run" ] || continue
  name=$(basename "$run")
  result="$sweep_dir/results/${name%%-*}.json"
  if [ ! -f "$result" ] || [ -n "$(find "$run" -newer "$result" -print -quit)" ]; then
    kept+=("$sweep_name/runs/$name")
  fi
done
tar czf "$out/$sweep_name.tgz" -C runs/sweeps "${kept[@]}"
tail -n 25 "$out/$call_name.log"
[ $# -gt 0 ] && tail -n 30 "$out/conv_bench.log"
exit 0
