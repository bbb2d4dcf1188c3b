"""End-to-end check of the drop-in path on a GPU: optimise RMSNorm and SwiGLU of a transformer MLP stack
at real sizes, swap the winners in as custom ops, and measure the model's speed before and after.

    python experiments/example_e2e.py [--platform h200] [--budget 40] [--seconds 900] \
        [--json experiments/example_e2e_result.json]

Device: one NVIDIA H200 (platform h200), bfloat16, LLaMA-7B-like MLP sizes (dim 4096, hidden 11008,
8192 tokens, 4 blocks). Prints the measured end-to-end speedup of eager PyTorch with the swapped-in
kernels over plain eager PyTorch, and the same under torch.compile (which traces through the custom
ops). Exits 1 if the swapped model's output does not match the original's (norm-relative error above
1e-2, as bf16 allows through 4 blocks). Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.transformer_block import optimize_and_swap as example  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--platform", default="h200")
    parser.add_argument("--budget", type=int, default=40, help="evaluations per op")
    parser.add_argument("--seconds", type=float, default=900.0, help="wall-clock budget per op")
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    cli = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("error: this experiment needs a CUDA GPU", file=sys.stderr)
        return 2
    args = example.parse_args(
        [
            "--platform", cli.platform, "--dim", "4096", "--hidden", "11008", "--depth", "4",
            "--tokens", "8192", "--dtype", "bfloat16", "--budget", str(cli.budget),
            "--seconds", str(cli.seconds), "--swap", "op", "--trials", str(cli.trials),
            "--run-root", str(ROOT / "runs" / "example_e2e"),
        ]
    )
    summary = example.run(args)  # eager before/after, output check

    # The same model under torch.compile, before and after swapping in the same runs' winners.
    import kernelevolve.api as api
    from examples.transformer_block.model import RMSNorm, SwiGLU, build_model

    original = build_model(args.dim, args.hidden, args.depth).to(device="cuda", dtype=torch.bfloat16)
    swapped = build_model(args.dim, args.hidden, args.depth).to(device="cuda", dtype=torch.bfloat16)
    for cls in (RMSNorm, SwiGLU):
        entry = summary["ops"].get(cls.__name__) or {}
        if entry.get("best"):
            example.swap_in(swapped, cls, api.result_from_run(entry["run_dir"]), "op")
    torch.manual_seed(1)
    x = torch.randn(args.tokens, args.dim, device="cuda", dtype=torch.bfloat16)
    summary["compiled_ms"] = example.time_model(torch.compile(original), x, args.trials)
    summary["compiled_swapped_ms"] = example.time_model(torch.compile(swapped), x, args.trials)
    summary["compiled_speedup"] = summary["compiled_ms"] / summary["compiled_swapped_ms"]
    print(f"measured end-to-end speedup, eager + kernels vs eager: {summary['speedup']:.3f}x")
    print(
        f"under torch.compile: {summary['compiled_ms']:.3f} ms -> {summary['compiled_swapped_ms']:.3f} ms "
        f"({summary['compiled_speedup']:.3f}x)"
    )
    if cli.json:
        cli.json.write_text(json.dumps(summary, indent=2))
    return 0 if summary["matches"] else 1


if __name__ == "__main__":
    sys.exit(main())
