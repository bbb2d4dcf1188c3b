#!/usr/bin/env bash
# Four level-1 problems of the sample, two at a time on one H200 as the sample sweep shares a GPU, with the
# GPU's memory and utilisation sampled every 0.5 s; the run folders (every evaluation's report) come back.
# Usage on the device: bash experiments/eval_throughput/2026-11-30_session13/diag_sweep.sh NAME [SWEEP ARGS...]
set -u
name=$1; shift
out=${OUT:?}
bash .devpack/ray/p2/install.sh >/dev/null 2>&1 || echo "devpack install failed" >&2
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -lms 500 > "$out/$name-smi.csv" &
smi=$!
printf -- "- L1/22\n- L1/5\n- L1/38\n- L1/90\n" > /tmp/diag_sample.md
timeout 230 python3 -m kernelevolve.sweep --kernelbench-path .kbdata/problems.jsonl --levels 1 --platform h200 \
  --budget-evals 12 --budget-seconds 40 --baseline-allowance-s 45 --out "runs/sweeps/$name" --evaluator ray \
  --set +evaluator.num_gpus_per_actor=0.5 --permissive --sample /tmp/diag_sample.md --isolate "$@" \
  > "$out/$name.log" 2>&1
echo "sweep exit $?"
kill $smi
tar czf "$out/$name.tgz" -C runs/sweeps "$name"
grep "kernelevolve.sweep INFO" "$out/$name.log" | tail -8
