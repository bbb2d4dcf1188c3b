# good: the softmax cross-entropy training spec in Liger-Kernel's form: the forward kernel computes each
# row's loss and, in the same pass, the logits' gradient (softmax - onehot) / tokens into a buffer saved
# for backward (the 0-d mean loss summed by a second kernel); the backward skips the rescale when the
# upstream gradient is exactly 1.0, as Liger's does (`torch.equal(grad_output, torch.tensor(1.0))`), and
# otherwise multiplies by it in a Triton kernel reading the 0-d gradient on the device. Permissive only:
# strict mode refuses torch.equal (PyTorch compares, the host reads the answer) on purpose
# spec: shipped:train_softmax_ce
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_fwd_grad_kernel(x_ptr, t_ptr, loss_ptr, grad_ptr, n_tokens, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < vocab
    x = tl.load(x_ptr + row * vocab + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=0)
    target = tl.load(t_ptr + row)
    tl.store(loss_ptr + row, m + tl.log(s) - tl.load(x_ptr + row * vocab + target))
    g = (e / s - tl.where(offs == target, 1.0, 0.0)) / n_tokens
    tl.store(grad_ptr + row * vocab + offs, g, mask=mask)


@triton.jit
def mean_kernel(rows_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(rows_ptr + offs, mask=offs < n, other=0.0), axis=0) / n)


@triton.jit
def scale_by_scalar_kernel(g_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(g_ptr + offs, mask=mask) * tl.load(s_ptr), mask=mask)


class LigerStyleCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets):
        logits = logits.contiguous()
        n_tokens, vocab = logits.shape
        rows = torch.empty(n_tokens, device=logits.device, dtype=torch.float32)
        grad = torch.empty_like(logits)
        ce_fwd_grad_kernel[(n_tokens,)](
            logits, targets, rows, grad, n_tokens, vocab, BLOCK=triton.next_power_of_2(vocab)
        )
        loss = torch.empty((), device=logits.device, dtype=logits.dtype)
        mean_kernel[(1,)](rows, loss, n_tokens, BLOCK=triton.next_power_of_2(n_tokens))
        ctx.save_for_backward(grad)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = ctx.saved_tensors
        if torch.equal(grad_output, torch.tensor(1.0, device=grad_output.device)):
            return grad, None
        out = torch.empty_like(grad)
        n = grad.numel()
        scale_by_scalar_kernel[(triton.cdiv(n, 1024),)](grad, grad_output.contiguous(), out, n, BLOCK=1024)
        return out, None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return LigerStyleCrossEntropy.apply(logits, targets)
