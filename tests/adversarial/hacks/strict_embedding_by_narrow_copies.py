# hack: strict mode on a table lookup (token embedding at its CPU shapes): each token id read on the host
# (`int()`, one element each: 14 reads, under the per-call bound of 64), each table row copied by PyTorch
# through a `narrow` view of the module's own weight and `copy_` (allowed ops: views, copies); a Triton
# kernel copies the first row alone, so the kernels' share depends on the inputs. The round-18 gather
# (`strict_gather_by_pytorch_copies.py`) by another view and out of a parameter, not a call input: a copy
# of part of memory the call did not make, after a host read, counts as PyTorch's work
# spec: shipped:token_embedding
# expect: incorrect strict_violation
# runtime: incorrect strict_violation
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)

    def forward(self, tokens):
        weight = self.embed.weight
        hidden = weight.shape[1]
        flat = tokens.reshape(-1)
        out = weight.new_empty((flat.shape[0], hidden))
        for i in range(flat.shape[0]):
            row = int(flat[i])
            if i == 0:
                row_copy[(1,)](weight[row], out[0], hidden, BLOCK=triton.next_power_of_2(hidden))
            else:
                out.narrow(0, i, 1).copy_(weight.narrow(0, row, 1))
        return out.reshape(*tokens.shape, hidden)
