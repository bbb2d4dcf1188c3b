#!/usr/bin/env bash
# Every 3 s until killed: each GPU process's memory and what it is (for out-of-memory diagnosis in sweeps).
# Usage on the device: bash experiments/adversarial_gpu/memory_watch.sh > "$OUT/memory_watch.log" &
while true; do
  echo "# $(date +%T)"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null | while IFS=', ' read -r pid used unit; do
    echo "$pid $used$unit $(ps -o args= -p "$pid" 2>/dev/null | cut -c1-120)"
  done
  sleep 3
done
