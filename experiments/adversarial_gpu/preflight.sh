#!/usr/bin/env bash
# GPU preflight of the judge/runner harness: the adversarial suite and the harness's GPU tests, then (with
# SWEEP=1) nothing else; the level-1 rate is measured by experiments/full_sweep_h200/device_call.sh after.
# Usage on the device: bash experiments/adversarial_gpu/preflight.sh
set -u
out=${OUT:?OUT must name the folder that comes back}
python3 - <<'PY' > "$out/environment.txt" 2>&1
import ctypes, os, platform, torch, triton
libc = ctypes.CDLL(None, use_errno=True)
print("kernel", platform.release(), "landlock abi", libc.syscall(444, None, 0, 1))
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, torch.cuda.get_device_name(0))
PY
cat "$out/environment.txt"
PYTHONUNBUFFERED=1 timeout "${PREFLIGHT_S:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider -rs \
  tests/adversarial tests/test_harness.py tests/test_eval_throughput.py tests/test_model_build.py \
  tests/test_racing.py tests/test_precision.py tests/test_containment.py tests/test_runner_release.py \
  tests/test_model_mode.py tests/test_kernelbench_judge.py ${EXTRA_TESTS:-} 2>&1 | tee "$out/preflight.log" | tail -n 40
