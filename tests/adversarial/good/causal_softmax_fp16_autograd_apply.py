# good: GPT-2's masked softmax in fp16 through a torch.autograd.Function whose forward launches the
# kernel (inference spec: the Function's backward is never reached and raises); one program per score row
# masks the keys past the row's query position, fp32 exp, fp16 store
# spec: shipped:causal_softmax
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(s_ptr, out_ptr, seq, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    q = row % seq
    offs = tl.arange(0, BLOCK)
    keep = (offs < seq) & (offs <= q)
    s = tl.load(s_ptr + row * seq + offs, mask=keep, other=-float("inf")).to(tl.float32)
    e = tl.exp(s - tl.max(s, axis=0))
    tl.store(out_ptr + row * seq + offs, (e / tl.sum(e, axis=0)).to(tl.float16), mask=offs < seq)


class CausalSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores: torch.Tensor) -> torch.Tensor:
        scores = scores.contiguous()
        seq = scores.shape[-1]
        out = torch.empty_like(scores)
        causal_softmax_kernel[(scores.numel() // seq,)](scores, out, seq, BLOCK=triton.next_power_of_2(seq))
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("inference only")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return CausalSoftmax.apply(scores)
