import json, sys, time, logging, collections
from kernelevolve.bench.kernelbench.problems import list_problems, problem_to_spec, scale_for_cpu
from kernelevolve.variation.compiler.capture import capture, CaptureError
from kernelevolve.variation.compiler.program import parse, Unsupported
logging.disable(logging.WARNING)
out = collections.Counter(); rows = []
for p in list_problems(".kbdata/problems.jsonl", (2, 3)):
    if p.level == 2 and p.problem_id < 35: continue
    spec = scale_for_cpu(problem_to_spec(p), 65536)
    t = time.time()
    try:
        prog = parse(capture(spec, spec.shapes[0], "cpu").code)
        res = f"ok {len(prog.kernels)} kernels lib={','.join(prog.library_calls)}"
        out["ok"] += 1
    except CaptureError as e:
        res = "CaptureError " + str(e).splitlines()[0][:150]; out["capture"] += 1
    except Unsupported as e:
        res = "Unsupported " + str(e)[:150]; out["unsupported"] += 1
    except Exception as e:
        res = f"BUG {type(e).__name__}: {str(e)[:150]}"; out["bug"] += 1
    print(f"L{p.level}/{p.problem_id} {time.time()-t:.1f}s {res}", flush=True)
print(out)
