"""Which device events run while compile_before_running compiles (the preflight of sample run 7 saw 48).

Run on a GPU: python experiments/eval_throughput/2026-11-30_session13/compile_events.py OUT_DIR
Prints each device event with the CPU op that launched it and that op's Python stack.
"""

import collections
import json
import os
import sys
import tempfile

# a cold Inductor cache, as a sweep's first compile of a problem meets it (session 13 ran this on a warm one
# first: 0 events, where the preflight's cold compile of the same model saw 48)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor_cold_")
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from kernelevolve.eval.compile_baseline import compile_before_running  # noqa: E402

out_dir = sys.argv[1]
torch._dynamo.reset()
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).cuda().eval()
x = torch.randn(2, 3, 16, 16, device="cuda")
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as trace:
    compiled = compile_before_running(model, [torch.empty_like(x)], "cuda:0")
    torch.cuda.synchronize()
device_events = [e for e in trace.events() if e.device_type == torch.autograd.DeviceType.CUDA]
print("device events:", len(device_events))
print(collections.Counter(e.name for e in device_events).most_common(20))
trace.export_chrome_trace(f"{out_dir}/compile_events_trace.json")
rows = []
for average in trace.key_averages(group_by_stack_n=12):
    if average.device_time_total > 0 or "Memcpy" in average.key or "cuda" in average.key.lower():
        rows.append(
            {
                "key": average.key,
                "count": average.count,
                "device_us": average.device_time_total,
                "stack": list(average.stack),
            }
        )
with open(f"{out_dir}/compile_events.json", "w") as handle:
    json.dump(rows, handle, indent=1)
for row in sorted(rows, key=lambda r: -r["count"])[:15]:
    print(row["count"], row["key"][:80], "|", " <- ".join(s.split("/")[-1] for s in row["stack"][:6]))
