#!/usr/bin/env bash
# The GPU work of issue 35 in one device call, for sessions where machines rarely start: the preflight of
# what changed on the CPU since the last GPU run, then level 1's evaluation rate with the memory watch
# beside it, in the time left. Each step is capped so the call ends inside the call's limit.
# Usage on the device (carry .devpack/hydra/p1, .kbdata, .kbsrc: experiments/INDEX.md):
#   bash experiments/adversarial_gpu/one_call.sh BUDGET_S NAME     e.g. 560 s38_h200_l1
# The GPU tests take about 8 minutes on an H200 (session 38): SHARD=1/2, then SHARD=2/2 in the next call,
# runs each half in its own call (`--shard`, tests/conftest.py); NAME resumes its level-1 sweep.
set -u
out=${OUT:?OUT must name the folder that comes back}
budget=$1; name=$2
begun=$SECONDS
bash .devpack/hydra/p1/install.sh >/dev/null 2>&1 || echo "hydra devpack: install failed"
{ git log --oneline -1; nvidia-smi -L; } > "$out/head.txt" 2>&1
if nvidia-smi -L | grep -q H100; then  # 80 GB: one problem at a time (level1_rate.sh says why)
  export PLATFORM=h100 PARALLEL=1
fi
KERNELBENCH_SRC=.kbsrc timeout -s INT "${PREFLIGHT_S:-300}" python3 -m pytest -m gpu -q -p no:cacheprovider \
  -rf -n "${WORKERS:-6}" ${SHARD:+--shard "$SHARD"} tests/test_reference_cycles.py tests/test_shared_tensors.py tests/test_runner_release.py \
  tests/test_timed_checks.py tests/test_device_wait.py tests/adversarial > "$out/preflight.log" 2>&1
echo "preflight exit $? after $(( SECONDS - begun )) s"
tail -n 3 "$out/preflight.log"
grep -E "^(FAILED|ERROR)" "$out/preflight.log" | head -n 20
left=$(( budget - (SECONDS - begun) - 100 ))  # level1_rate.sh adds 60 s to its limit, then its summary
if [ "$left" -lt 90 ]; then echo "no time left for level 1 ($left s)"; exit 0; fi
bash experiments/adversarial_gpu/memory_watch.sh > "$out/memory_watch.log" 2>&1 &
watch=$!
bash experiments/adversarial_gpu/level1_rate.sh "$left" "$name"
kill "$watch" 2>/dev/null
echo "call took $(( SECONDS - begun )) s"
