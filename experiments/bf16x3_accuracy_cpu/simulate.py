"""3xBF16 and fp32 GEMM error against fp64, as a share of KernelBench's fp32 tolerance (1e-4 abs + 1e-4 rel).

3xBF16 as Triton's input_precision="bf16x3" computes it: each operand split into a bf16 high part and a
bf16 low part, and hi*hi + hi*lo + lo*hi summed; here the products are summed in fp64, so the figure is the
split's error alone (fp32 accumulation adds about the fp32 column's). Linear layers as KernelBench builds
them (nn.Linear's default init), rows of inputs as KernelBench draws them (rand or randn).

    python experiments/bf16x3_accuracy_cpu/simulate.py
"""

import torch


def split(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    high = t.bfloat16().double()
    low = (t.double() - high).float().bfloat16().double()
    return high, low


def main() -> None:
    torch.manual_seed(0)
    for rows, k, n, draw in [
        (16, 8192, 8192, "rand"),
        (16, 8192, 8192, "randn"),
        (16, 32768, 2048, "rand"),
        (64, 1024, 4096, "randn"),
    ]:
        x = torch.rand(rows, k) if draw == "rand" else torch.randn(rows, k)
        linear = torch.nn.Linear(k, n)
        w, b = linear.weight.detach().t().contiguous(), linear.bias.detach()
        exact = x.double() @ w.double() + b.double()
        (xh, xl), (wh, wl) = split(x), split(w)
        bf16x3 = xh @ wh + xh @ wl + xl @ wh + b.double()
        fp32 = (x @ w + b).double()
        allowed = 1e-4 + 1e-4 * exact.abs()
        print(
            f"{rows}x{k} @ {k}x{n} ({draw}): worst error / allowed: bf16x3 "
            f"{((bf16x3 - exact).abs() / allowed).max().item():.3f}, fp32 {((fp32 - exact).abs() / allowed).max().item():.3f}"
        )


if __name__ == "__main__":
    main()
