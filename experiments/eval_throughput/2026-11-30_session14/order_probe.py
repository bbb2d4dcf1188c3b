import torch
from kernelevolve.eval import timers
from kernelevolve.eval.compile_baseline import compile_before_running
import tests.test_compile_graphs as g

def medians():
    def block():
        torch.manual_seed(0)
        layers = [torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.GELU()]
        return torch.nn.Sequential(*layers * 4).cuda().eval()
    x = torch.randn(8, 16, 64, 64, device="cuda")
    out = []
    for make in (lambda m: torch.compile(m), lambda m: compile_before_running(m, [torch.empty_like(x)], "cuda:0")):
        torch._dynamo.reset()
        model = make(block())
        with torch.no_grad():
            model(x)
        out.append(round(timers.time_callable(model, [[x]], "cuda:0", trials=50, warmup=5, flush_l2=True, l2_bytes=60 << 20).median_ms, 4))
    torch._dynamo.reset()
    return out

print("before", medians(), medians())
g.test_on_the_gpu_a_host_bound_compile_baseline_gets_its_cuda_graph_timing()
print("after graphs test", medians(), medians())
import torch._inductor.config as c
print("cudagraphs flag", c.triton.cudagraphs)
