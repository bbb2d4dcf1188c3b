#!/usr/bin/env bash
# Issue 36's H200 re-run under KernelBench's protocol (reference at PyTorch's defaults, models as built),
# with KernelBench's own evaluator judging every winner beside ours. Resumes where a call stopped.
# Usage on the device (hydra and pydantic carried as .devpack/hydra/p1: experiments/INDEX.md packs it;
# problems as .kbdata, KernelBench's src as .kbsrc):
#   bash experiments/kernelbench_protocol/run.sh SAMPLE_MD OUT_NAME TIME_LIMIT_S
#   SAMPLE_MD: experiments/sweep_sample.md (the 25-problem sample) or
#              experiments/kernelbench_protocol/mode_dependent.md (BatchNorm, InstanceNorm with running
#              statistics, dropout: from select_mode_dependent.py)
set -u
out=${OUT:?OUT must name the folder that comes back}
export KERNELBENCH_SRC=${KERNELBENCH_SRC:-.kbsrc}
bash .devpack/hydra/p1/install.sh >/dev/null 2>&1 || echo "hydra devpack: install failed" >&2
source experiments/device_state.sh  # resumes from a carried .resume/OUT_NAME on a fresh machine
restore_folder "runs/sweeps/$2"
PYTHONUNBUFFERED=1 timeout -k 10 $(( $3 + 120 )) python3 -m kernelevolve.bench.sweep --kernelbench-path .kbdata/problems.jsonl \
  --sample "$1" --platform h200 --budget-evals 12 --budget-seconds 40 --baseline-allowance-s 45 \
  --out "runs/sweeps/$2" --time-limit-s "$3" --evaluator local --permissive --isolate --parallel 2 \
  --kernelbench-judge "$KERNELBENCH_SRC" > "$out/$2.log" 2>&1
echo "sweep exit $?"
python3 -m kernelevolve.bench.sweep --out "runs/sweeps/$2" --summary-only --sample "$1" > "$out/$2_summary.log" 2>&1
save_folder "runs/sweeps/$2"
grep -E "kernelevolve.bench.sweep INFO: L[0-9]" "$out/$2.log" | tail -n 30
