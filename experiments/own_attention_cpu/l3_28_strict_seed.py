"""KernelBench L3/28 (VisionTransformer): its strict compiler seed (our GEMMs and flash attention in place of
cuBLAS and the fused attention op) through the CPU harness at KernelBench's size and fp32 tolerance.

Run from the repository root, with KernelBench's problems as JSONL (default .kbdata/problems.jsonl):
    python experiments/own_attention_cpu/l3_28_strict_seed.py [PROBLEMS_JSONL]
"""
import json, sys, time
sys.path.insert(0, '.')
from kernelevolve.types import KernelSpec, EvalRequest, EvalSettings
from kernelevolve.platforms import load_platform
from kernelevolve.variation.compiler_seed import CompilerSeedOperator
from kernelevolve.eval.local import LocalEvaluator
from tests.proposal_context import seed_context


def main():
    platform = load_platform("cpu")
    r = next(json.loads(l) for l in open(sys.argv[1] if len(sys.argv) > 1 else '.kbdata/problems.jsonl') if json.loads(l)['level'] == 3 and json.loads(l)['problem_id'] == 28)
    spec = KernelSpec(name=r['name'], reference_source=r['code'], atol=1e-4, rtol=1e-4)
    own = [s for s in CompilerSeedOperator(strict=False).propose(seed_context(spec, platform)) if s.metadata.get('own_kernels')]
    settings = EvalSettings(correctness_trials=1, timing_trials=1, warmup_trials=0, timeout_s=1500, measure_compile_baseline=False)
    t = time.time()
    with LocalEvaluator(platform, settings) as evaluator:
        report = evaluator.submit(EvalRequest(own[0], spec, platform.name, settings)).result()
    print("status", report.status, "feedback", (report.feedback or "")[:500], "took", round(time.time() - t), "s")


if __name__ == "__main__":
    main()
