"""torch.compile's default and CUDA-graph baselines of the sample's host-bound level-3 networks, alone.

Run on a GPU from the repository root:
  PYTHONPATH=. python3 experiments/eval_throughput/2026-11-30_session14/graph_baselines.py KERNELBENCH_JSONL OUT_DIR
Prints one row per problem and writes graph_baselines.json to OUT_DIR.
"""

import json
import sys
import time

from kernelevolve.eval.harness import measure_baselines
from kernelevolve.bench.kernelbench.problems import load_problem, problem_to_spec
from kernelevolve.platforms import load_platform
from kernelevolve.types import EvalSettings

path, out_dir = sys.argv[1], sys.argv[2]
platform = load_platform("h200")
settings = EvalSettings(measure_compile_baseline=True)  # 100 timed calls, as the sweep's baselines
rows = []
for level, problem_id in ((3, 4), (3, 20), (3, 9)):
    spec = problem_to_spec(load_problem(path, level, problem_id))
    started = time.monotonic()
    (baseline,) = measure_baselines(spec, platform, settings).values()
    row = {
        "problem": f"L{level}/{problem_id}",
        "seconds": round(time.monotonic() - started, 1),
        **{
            key: (value.to_json() if hasattr(value, "to_json") else value)
            for key, value in vars(baseline).items()
        },
    }
    rows.append(row)
    graphs = baseline.compiled_graphs
    print(
        f"{row['problem']}: eager {baseline.eager.median_ms:.3f} ms (host {baseline.eager.host_ms}), "
        f"compile {baseline.compiled.median_ms if baseline.compiled else None} ms "
        f"(host {baseline.compiled.host_ms if baseline.compiled else None}), "
        f"graphs {graphs.median_ms if graphs else None} ms, {row['seconds']} s",
        flush=True,
    )
with open(f"{out_dir}/graph_baselines.json", "w") as handle:
    json.dump(rows, handle, indent=1)
