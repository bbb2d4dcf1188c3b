"""Does Triton compile kernels in parallel threads? Our own GEMM at 8 configurations, built for sm_90 (no GPU).

    TRITON_CACHE_DIR=$(mktemp -d) python experiments/parallel_compile_cpu/compile_threads.py seq
    TRITON_CACHE_DIR=$(mktemp -d) python experiments/parallel_compile_cpu/compile_threads.py 2
"""

import importlib.util
import itertools
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernelevolve.variation.compiler.own_gemm import GEMM_SOURCE, GEMM_TUNABLES
path = str(Path(tempfile.mkdtemp()) / "gemm_mod.py")
open(path, "w").write("\n".join(["import torch\nimport triton\nimport triton.language as tl\n", *GEMM_TUNABLES, GEMM_SOURCE]))
spec = importlib.util.spec_from_file_location("gm", path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
kernel = m._ke_matmul_kernel
def build(args):
    bm, bn, prec = args
    constants = dict(HAS_BIAS=True, PRECISION=prec, A_M_CONTIGUOUS=False, B_K_CONTIGUOUS=True, SPLIT_K=1,
                     HAS_EPILOGUE=False, STORE_C=True, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=32, GROUP_M=8)
    types = {n: "constexpr" if n in constants else "*fp32" if n.endswith("_ptr") else "fp32" if n in ("alpha","beta") else "i32" for n in kernel.arg_names}
    indexed = {(kernel.arg_names.index(n),): v for n, v in constants.items()}
    triton.compile(ASTSource(kernel, types, indexed), target=GPUTarget("cuda", 90, 32))
configs = list(itertools.product([64, 128], [64, 128], ["ieee", "tf32x3"]))
mode = sys.argv[1]
t = time.perf_counter()
if mode == "seq":
    for c in configs: build(c)
else:
    with ThreadPoolExecutor(int(mode)) as pool: list(pool.map(build, configs))
print(mode, len(configs), f"{time.perf_counter()-t:.1f}s")
