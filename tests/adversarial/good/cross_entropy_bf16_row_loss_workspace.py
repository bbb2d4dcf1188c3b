# good: mean cross entropy of bf16 logits with the per-row fp32 losses in a workspace the module allocates
# once per (rows, device) and reuses on every call: a chunked online log-sum-exp kernel writes each row's
# loss there, a one-program kernel writes their mean into a fresh 0-d bf16 result
# spec: shipped:cross_entropy
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(logits_ptr, targets_ptr, loss_ptr, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * vocab
    m = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < vocab, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, x)
        s = s * tl.exp(tl.where(new_m == float("-inf"), 0.0, m - new_m)) + tl.where(
            x == float("-inf"), 0.0, tl.exp(x - new_m)
        )
        m = new_m
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(tl.where(m == float("-inf"), float("-inf"), m - row_max)), axis=0)
    target = tl.load(targets_ptr + row).to(tl.int64)
    picked = tl.load(base + target).to(tl.float32)
    tl.store(loss_ptr + row, row_max + tl.log(total) - picked)


@triton.jit
def mean_kernel(loss_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, rows, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + idx, mask=idx < rows, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / rows).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._row_losses: dict[tuple[int, torch.device], torch.Tensor] = {}

    def _workspace(self, rows: int, device: torch.device) -> torch.Tensor:
        key = (rows, device)
        if key not in self._row_losses:
            self._row_losses[key] = torch.empty(rows, dtype=torch.float32, device=device)
        return self._row_losses[key]

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        rows, vocab = logits.shape
        losses = self._workspace(rows, logits.device)
        result = torch.empty((), dtype=logits.dtype, device=logits.device)
        row_loss_kernel[(rows,)](logits, targets, losses, vocab, BLOCK=256)
        mean_kernel[(1,)](losses, result, rows, BLOCK=64)
        return result
