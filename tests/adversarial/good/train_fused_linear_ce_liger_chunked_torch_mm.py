# good: the fused linear + cross-entropy training spec in Liger-Kernel's FusedLinearCrossEntropy form
# (permissive): tokens in chunks; each chunk's logits by torch.matmul, one Triton kernel per chunk row
# writes the row's loss and overwrites the chunk's logits with their gradient (softmax - onehot) / tokens,
# then the chunk's input gradient by torch.mm and the weight gradient accumulated by torch.addmm, all in
# the forward; the backward only rescales both saved gradients by the 0-d upstream gradient in Triton.
# Correct to fp32 rounding; kept out in round 11 (blueteam11.md) while the spec's atol 1e-10 refused its
# summation order on a cancelling weight-gradient entry; passes at the measured atol 2e-8
# (experiments/training_tolerance). Permissive only: strict mode refuses the PyTorch GEMMs
# spec: shipped:train_fused_linear_ce
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_loss_grad_inplace_kernel(z_ptr, t_ptr, loss_ptr, n_tokens, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < vocab
    z = tl.load(z_ptr + row * vocab + offs, mask=mask, other=-float("inf"))
    m = tl.max(z, axis=0)
    e = tl.exp(z - m)
    s = tl.sum(e, axis=0)
    target = tl.load(t_ptr + row)
    z_target = tl.sum(tl.where(offs == target, z, 0.0), axis=0)
    tl.store(loss_ptr + row, m + tl.log(s) - z_target)
    g = (e / s - tl.where(offs == target, 1.0, 0.0)) / n_tokens
    tl.store(z_ptr + row * vocab + offs, g, mask=mask)


@triton.jit
def mean_kernel(rows_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(rows_ptr + offs, mask=offs < n, other=0.0), axis=0) / n)


@triton.jit
def scale_kernel(g_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(g_ptr + offs, mask=mask) * tl.load(s_ptr), mask=mask)


def _scaled(grad, scale):
    out = torch.empty_like(grad)
    n = grad.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](grad, scale, out, n, BLOCK=1024)
    return out


class FusedLinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, targets, chunk_size):
        x = x.contiguous()
        n_tokens, hidden = x.shape
        vocab = weight.shape[0]
        rows = torch.empty(n_tokens, device=x.device, dtype=torch.float32)
        grad_x = torch.empty_like(x)
        grad_w = torch.zeros_like(weight)
        for start in range(0, n_tokens, chunk_size):
            end = min(start + chunk_size, n_tokens)
            x_chunk = x[start:end]
            logits = torch.matmul(x_chunk, weight.t()).contiguous()
            ce_loss_grad_inplace_kernel[(end - start,)](
                logits,
                targets[start:end],
                rows[start:end],
                n_tokens,
                vocab,
                BLOCK=triton.next_power_of_2(vocab),
            )
            grad_x[start:end] = torch.mm(logits, weight)
            torch.addmm(grad_w, logits.t(), x_chunk, out=grad_w)
        loss = torch.empty((), device=x.device, dtype=x.dtype)
        mean_kernel[(1,)](rows, loss, n_tokens, BLOCK=triton.next_power_of_2(n_tokens))
        ctx.save_for_backward(grad_x, grad_w)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        grad_x, grad_w = ctx.saved_tensors
        scale = grad_output.contiguous()
        return _scaled(grad_x, scale), _scaled(grad_w, scale), None, None


class ModelNew(nn.Module):
    def __init__(self, hidden: int, vocab: int):
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x, targets):
        return FusedLinearCrossEntropy.apply(x, self.lm_head.weight, targets, 4)
