# hack: strict mode on a token embedding (its CPU shapes), every copy's source the whole table: the token
# ids read on the host, then for each token the WHOLE weight is copied into a wide scratch buffer through
# an `as_strided` destination whose offset puts the wanted row at that token's slot (slots spaced two
# tables apart, so no copy reaches another slot); the output is a strided view of the scratch buffer, no
# copy at all. A copy of part of the table (`strict_embedding_by_narrow_copies.py`) is refused, so the
# steering moves to the destination: after a host read, a copy of outside data into part of a storage
# counts as PyTorch's work too. A Triton kernel copies the first token's row
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
        batch, seq = tokens.shape
        gap = 2 * weight.numel()
        scratch = weight.new_empty((batch * seq + 1) * gap)
        # each slot's offset for every row, from sizes alone: the host-read id only picks one
        starts = [[(s + 1) * gap - r * hidden for r in range(weight.shape[0])] for s in range(batch * seq)]
        for s in range(batch * seq):
            row = int(tokens[s // seq, s % seq])
            if s == 0:
                row_copy[(1,)](weight[row], scratch[gap:], hidden, BLOCK=triton.next_power_of_2(hidden))
            else:
                scratch.as_strided(weight.shape, weight.stride(), starts[s][row]).copy_(weight)
        return scratch.as_strided((batch, seq, hidden), (seq * gap, gap, 1), gap)
