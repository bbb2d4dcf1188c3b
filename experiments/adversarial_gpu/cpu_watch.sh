#!/usr/bin/env bash
# Every 3 s until killed: the load average and the busiest processes right now (for diagnosing CPU
# contention that slows the device lock's holder in sweeps).
# Usage on the device: bash experiments/adversarial_gpu/cpu_watch.sh > "$OUT/cpu_watch.log" &
while true; do
  echo "# $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  top -b -n 1 -w 160 -c 2>/dev/null | sed -n '3p;8,19p'
  sleep 3
done
