#!/usr/bin/env bash
# The sample sweep's level 1 under the judge/runner harness, for the evaluation rate (issue 35's cost target).
# Usage on the device (hydra carried as .devpack/hydra): bash experiments/adversarial_gpu/level1_rate.sh TIME_LIMIT_S
set -u
out=${OUT:?OUT must name the folder that comes back}
bash .devpack/hydra/p1/install.sh >/dev/null 2>&1 || echo "hydra devpack: install failed" >&2
PYTHONUNBUFFERED=1 timeout -k 10 $(( $1 + 60 )) python3 -m kernelevolve.bench.sweep --kernelbench-path .kbdata/problems.jsonl \
  --sample experiments/adversarial_gpu/level1_sample.md --platform h200 --budget-evals 12 --budget-seconds 40 \
  --baseline-allowance-s 45 --out runs/sweeps/h200_adv_l1 --time-limit-s "$1" --evaluator local --permissive \
  --isolate --parallel 2 > "$out/level1.log" 2>&1
echo "sweep exit $?"
python3 -m kernelevolve.bench.sweep --out runs/sweeps/h200_adv_l1 --summary-only --sample experiments/adversarial_gpu/level1_sample.md \
  > "$out/summary.log" 2>&1
tar czf "$out/h200_adv_l1.tgz" -C runs/sweeps --exclude=caches --exclude=runs h200_adv_l1
grep -E "kernelevolve.bench.sweep INFO: L1" "$out/level1.log" | tail -n 12
tail -n 25 "$out/summary.log"
