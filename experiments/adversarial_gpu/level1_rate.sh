#!/usr/bin/env bash
# The sample sweep's level 1 under the judge/runner harness, for the evaluation rate (issue 35's cost target).
# Usage on the device (hydra and pydantic carried as .devpack/hydra: experiments/INDEX.md packs it):
#   bash experiments/adversarial_gpu/level1_rate.sh TIME_LIMIT_S [NAME [SAMPLE [KEY=VALUE ...]]]
# e.g. `... 240 capped experiments/adversarial_gpu/l1_large.md platform.eval.precompile_max_input_mb=256`
# On an 80 GB H100: PLATFORM=h100 PARALLEL=1. Two problems side by side (each with its evaluation
# children) fit the H200's memory, not the H100's: session 33's call ran out of device memory on every
# multi-GB problem (L1/5, 22, 38, 46)
set -u
out=${OUT:?OUT must name the folder that comes back}
limit=$1; name=${2:-h200_adv_l1}; sample=${3:-experiments/adversarial_gpu/level1_sample.md}
shift $(( $# < 3 ? $# : 3 ))
settings=(); [ $# -gt 0 ] && settings=(--set "$@")
bash .devpack/hydra/p1/install.sh >/dev/null 2>&1 || echo "hydra devpack: install failed" >&2
source experiments/device_state.sh  # resumes from a carried .resume/NAME on a fresh machine
restore_folder "runs/sweeps/$name"
PYTHONUNBUFFERED=1 timeout -k 10 $(( limit + 60 )) python3 -m kernelevolve.bench.sweep --kernelbench-path .kbdata/problems.jsonl \
  --sample "$sample" --platform "${PLATFORM:-h200}" --budget-evals 12 --budget-seconds 40 \
  --baseline-allowance-s 45 --out "runs/sweeps/$name" --time-limit-s "$limit" --evaluator local --permissive \
  --isolate --parallel "${PARALLEL:-2}" "${settings[@]}" > "$out/$name.log" 2>&1
echo "sweep exit $?"
python3 -m kernelevolve.bench.sweep --out "runs/sweeps/$name" --summary-only --sample "$sample" \
  > "$out/$name.summary.log" 2>&1
save_folder "runs/sweeps/$name"
grep -E "kernelevolve.bench.sweep INFO: L1" "$out/$name.log" | tail -n 12
tail -n 25 "$out/$name.summary.log"
