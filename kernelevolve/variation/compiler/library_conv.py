"""cuDNN's convolution at near-fp32 accuracy on TF32 tensor cores, for seeds that keep the library call.

The harness runs candidates with exact fp32 convolutions (eval/precision.py), where cuDNN is several
times slower than in TF32 (L1/56 on the H200: 25.4 ms exact, 2.95 ms TF32), and a single TF32 pass misses
KernelBench's 1e-4 tolerance. "tf32x3" splits input and weight into a part on TF32's 10-bit mantissa
and the rest (x = x_hi + x_lo, exactly) and adds three TF32 convolutions, x_hi*w_hi + x_hi*w_lo +
x_lo*w_hi: the terms left out or rounded are about 2^-21 of the result, as in our own kernels' 3xTF32
dot products, for three passes at TF32 speed. The splits are elementwise and keep the tensors' memory
format, so cuDNN returns the layout the plain call would.

"tf32_bf16" computes the same three terms in two passes: x_hi*w_hi in TF32, and both cross terms in one
BF16 convolution over input channels doubled ([x_hi, x_lo] against [w_lo, w_hi], paired within each
group). The cross terms are within 2^-10 of the result, so BF16's 8-bit operands and output cost about
2^-18 of it, still far inside 1e-4 (one TF32 pass: about 2^-11); BF16 tensor cores run twice TF32's
rate, so the doubled pass costs about one TF32 pass, and the whole about two where tf32x3 costs three.

Convolutions that sum fewer than 32 products into each output element (depthwise ones, thin groups) stay
exact under either split: they are memory-bound in exact fp32 too, and the BF16 pass over channel pairs is
a shape cuDNN may run slowly (L3/21, whose one thin convolution is a depthwise 5x5, ran its splits 5-7x
slower than its exact call).

"tf32x3_one_pass" computes tf32x3's three terms in one TF32 convolution over input channels tripled
([x_hi, x_lo, x_hi] against [w_hi, w_hi, w_lo], within each group), so cuDNN sums them in its fp32
accumulator: three passes' tensor-core work but one output written and no adds, where both splits write
an output per pass and add them (tf32_bf16: the BF16 pass's output read again with the TF32 one's, and
the sum written: on L2/5's 2.15 GB output about 5 GB of the traffic). The tripled input is written by one
kernel (tf32_split's `_ke_split_triple_into`) on a GPU.

"tf32" is one TF32 pass, PyTorch's own default for convolutions (what the eager baseline runs): where
eager's output meets the tolerance that way, so may a candidate's, and the check decides.

In permissive seeds rendered for a GPU, Inductor's `torch.convolution(...)` host steps call
`_library_convolution(...)`; `LIBRARY_CONV_FP32_PRECISION` ("ieee", the plain call, "tf32_bf16", "tf32x3",
"tf32x3_one_pass" or "tf32") is a tunable, and GPU seeds come with a "tf32_bf16" twin and, where eager's TF32 output met the
tolerance, a "tf32" one (compiler_seed); "tf32x3" and "tf32x3_one_pass" are left to tuning.

On a GPU the TF32/BF16 split's operands come from tf32_split.py's fused kernel (`_ke_split_into`): on L2/1's
537 MB input about 1.6 GB less traffic a call than PyTorch's ops (an estimate, not measured yet;
experiments/full_sweep_h200 has the records to compare with).

`LIBRARY_CONV_SPLIT_LAYOUT` runs the TF32/BF16 split in channels-last for an input in another layout
(converted there and back): on the H200 the split's seeds in the reference's layout ran 1.18-1.31x slower
than those in Inductor's (channels-last) layout (conv_bench, L2/5, L2/11, L2/52), and L3/6's 31 ms against
16.3; a tunable, off by default, until conv_bench measures it alone.

`LIBRARY_CONV_BENCHMARK`, another tunable, has cuDNN time its algorithms for each convolution on the first
call and keep the fastest (`cudnn.benchmark`, for these calls only), where by default its heuristics pick
one: the setting a deployment can make too, which neither eager nor torch.compile makes by default. The
first call (a warm-up, and a graph replay's eager warm-up before its capture) pays the timing.
"""

from __future__ import annotations

import ast

from kernelevolve.variation.compiler.own_conv import CONVOLUTION

LIBRARY_CONV_FUNCTION = "_library_convolution"

LIBRARY_CONV_TUNABLES = (
    "# cuDNN convolutions: exact fp32, hi/lo splits of input and weight in one TF32 and one BF16 pass, in",
    "# three TF32 passes or in one over tripled channels, or one TF32 pass (PyTorch's default, as eager runs them)",
    'LIBRARY_CONV_FP32_PRECISION = "ieee"  # tune: "ieee", "tf32_bf16", "tf32x3", "tf32x3_one_pass", "tf32"',
    "# cuDNN times its algorithms on a convolution's first call and keeps the fastest (cudnn.benchmark)",
    "LIBRARY_CONV_BENCHMARK = False  # tune: False, True",
    "# the TF32/BF16 split's passes in the input's layout, or in channels-last (the result in the input's)",
    'LIBRARY_CONV_SPLIT_LAYOUT = "input"  # tune: "input", "channels_last"',
)

# needs compiler/tf32_split.py's TF32_SPLIT_SOURCE and TF32_SPLIT_KERNEL_SOURCE beside it (render includes them once)
LIBRARY_CONV_SOURCE = """
def _ke_convolution_3xtf32(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    # x_hi*w_hi + x_hi*w_lo + x_lo*w_hi, the small terms first; TF32 rounds none of the hi parts
    x_hi, x_lo = _ke_tf32_split(x)
    w_hi, w_lo = _ke_tf32_split(weight)
    args = (stride, padding, dilation, transposed, output_padding, groups)
    out = torch.convolution(x_lo, w_hi, None, *args)
    out += torch.convolution(x_hi, w_lo, None, *args)
    out += torch.convolution(x_hi, w_hi, bias, *args)
    return out


def _ke_tf32_triple(t, groups, channel_dim, lo_at):
    # t's hi and lo parts three times along the channel dim within each group, in fp32 and t's memory
    # format: hi in each part but `lo_at` (one fused kernel on a GPU where t's layout allows)
    shape = list(t.shape)
    shape[channel_dim] *= 3
    triple = torch.empty(shape, dtype=torch.float32, device=t.device, memory_format=_ke_memory_format(t))
    if t.is_cuda and _ke_split_triple_into(t, triple, groups, channel_dim, lo_at):
        return triple
    per_group = t.shape[channel_dim] // groups
    parts = triple.view(shape[:channel_dim] + [groups, 3, per_group] + shape[channel_dim + 1 :])
    grouped = list(t.shape[:channel_dim]) + [groups, per_group] + list(t.shape[channel_dim + 1 :])
    hi = _ke_tf32_hi(t).view(grouped)
    for index, part in enumerate(parts.unbind(channel_dim + 1)):
        if index == lo_at:
            torch.sub(t.view(grouped), hi, out=part)
        else:
            part.copy_(hi)
    return triple


def _ke_convolution_3xtf32_one_pass(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    # x_hi*w_hi + x_lo*w_hi + x_hi*w_lo summed in cuDNN's accumulator: one TF32 convolution over the input
    # channels tripled, [x_hi, x_lo, x_hi] against [w_hi, w_hi, w_lo] within each group (the weight's input
    # channels: dim 1 of a convolution's weight, per group already; dim 0 of a transposed one's, in groups)
    w_groups, w_dim = (groups, 0) if transposed else (1, 1)
    x_triple = _ke_tf32_triple(x, groups, 1, lo_at=1)
    w_triple = _ke_tf32_triple(weight, w_groups, w_dim, lo_at=2)
    return torch.convolution(x_triple, w_triple, bias, stride, padding, dilation, transposed, output_padding, groups)


def _ke_bf16_pair_empty(t, channel_dim, memory_format):
    # a bf16 tensor of t's shape with the channel dim doubled, in `memory_format`
    shape = list(t.shape)
    shape[channel_dim] *= 2
    return torch.empty(shape, dtype=torch.bfloat16, device=t.device, memory_format=memory_format)


def _ke_bf16_pair(t, hi, groups, channel_dim, memory_format, lo_first):
    # [hi, t - hi] ([t - hi, hi] with lo_first) along the channel dim within each group, in bf16:
    # channels g of the pair are group g's two parts, so a grouped convolution over the pair meets the
    # weight's pair alike. Each half is written once from t and hi (lo is never an fp32 tensor).
    shape = list(t.shape)
    per_group = shape[channel_dim] // groups
    pair = _ke_bf16_pair_empty(t, channel_dim, memory_format)
    split = shape[:channel_dim] + [groups, 2, per_group] + shape[channel_dim + 1 :]
    first, second = pair.view(split).unbind(channel_dim + 1)
    lo_half, hi_half = (first, second) if lo_first else (second, first)
    grouped = shape[:channel_dim] + [groups, per_group] + shape[channel_dim + 1 :]
    hi_half.copy_(hi.view(grouped))
    torch.sub(t.view(grouped), hi.view(grouped), out=lo_half)
    return pair


def _ke_channels_last(t):
    # the channels-last memory format of t's rank, None where it has none
    return {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())


def _ke_memory_format(t):
    channels_last = _ke_channels_last(t)
    if channels_last is not None and t.is_contiguous(memory_format=channels_last):
        return channels_last
    return torch.contiguous_format


def _ke_hi_and_bf16_pair(t, groups, channel_dim, lo_first):
    # t's TF32 hi part and its BF16 pair (_ke_bf16_pair): one fused kernel on a GPU (_ke_split_into) where
    # t's layout allows, else PyTorch's ops
    memory_format = _ke_memory_format(t)
    if t.is_cuda:
        hi, pair = torch.empty_like(t), _ke_bf16_pair_empty(t, channel_dim, memory_format)
        if _ke_split_into(t, hi, pair, groups, channel_dim, lo_first):
            return hi, pair
    hi = _ke_tf32_hi(t)
    return hi, _ke_bf16_pair(t, hi, groups, channel_dim, memory_format, lo_first)


def _ke_convolution_tf32_bf16(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    args = (stride, padding, dilation, transposed, output_padding, groups)
    channels_last = _ke_channels_last(x)
    if LIBRARY_CONV_SPLIT_LAYOUT != "channels_last" or channels_last is None or _ke_memory_format(x) == channels_last:
        return _ke_convolution_tf32_bf16_here(x, weight, bias, *args)
    # cuDNN's BF16 kernels work in channels-last; an input in another layout is converted for both passes,
    # and the result back to the layout the plain call would return (the host code after it relies on it)
    out = _ke_convolution_tf32_bf16_here(
        x.contiguous(memory_format=channels_last), weight.contiguous(memory_format=channels_last), bias, *args
    )
    return out.contiguous(memory_format=_ke_memory_format(x))


def _ke_convolution_tf32_bf16_here(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    # x_hi*w_hi in one TF32 pass (exact products: TF32 rounds no hi part), and both cross terms
    # x_hi*w_lo + x_lo*w_hi in one BF16 pass over doubled input channels: the cross terms are within
    # 2^-10 of the result, so BF16's 8-bit operands and output leave errors near 2^-18 of it
    args = (stride, padding, dilation, transposed, output_padding, groups)
    x_hi, x_pair = _ke_hi_and_bf16_pair(x, groups, 1, lo_first=False)
    # the weight's input channels: dim 1 of a convolution's (out, in/groups, ...), dim 0 of a transposed
    # one's (in, out/groups, ...), grouped there in blocks of in/groups; [w_lo, w_hi] meets [x_hi, x_lo]
    w_groups, w_dim = (groups, 0) if transposed else (1, 1)
    w_hi, w_pair = _ke_hi_and_bf16_pair(weight, w_groups, w_dim, lo_first=True)
    out = torch.convolution(x_hi, w_hi, bias, *args)
    out += torch.convolution(x_pair, w_pair, None, *args)
    return out


def _ke_split_pays(input, weight, stride, transposed, groups):
    # Products summed into each output element. Below 32 a convolution is memory-bound even in exact fp32
    # (depthwise 3x3: 9), so a split's extra passes only add time, and its BF16 pass over two channels a
    # group may be a shape cuDNN runs slowly: L3/21, whose one thin convolution is a depthwise 5x5, ran
    # its splits 5-7x slower than its exact call
    taps = 1
    for size in weight.shape[2:]:
        taps *= size
    if transposed:  # each output element meets about 1/stride of the kernel's taps
        for step in stride:
            taps = max(1, taps // step)
    return (input.shape[1] // groups) * taps >= 32


def _library_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    # torch.convolution's parameters, which Inductor's host code passes by name
    args = (stride, padding, dilation, transposed, output_padding, groups)
    precision = LIBRARY_CONV_FP32_PRECISION
    splits = ("tf32x3", "tf32_bf16", "tf32x3_one_pass")
    if precision in splits and not _ke_split_pays(input, weight, stride, transposed, groups):
        precision = "ieee"
    split = (precision in splits or precision == "tf32") and input.dtype == torch.float32
    if not input.is_cuda or not (split or LIBRARY_CONV_BENCHMARK):
        return torch.convolution(input, weight, bias, *args)
    cudnn = torch.backends.cudnn
    # TF32 and algorithm timing for these calls only; the flags are restored on leaving, even on an error
    with cudnn.flags(
        enabled=cudnn.enabled,
        benchmark=cudnn.benchmark or LIBRARY_CONV_BENCHMARK,
        deterministic=cudnn.deterministic,
        allow_tf32=True if split else cudnn.allow_tf32,
    ):
        if not split or precision == "tf32":
            return torch.convolution(input, weight, bias, *args)
        if precision == "tf32_bf16":
            return _ke_convolution_tf32_bf16(input, weight, bias, *args)
        if precision == "tf32x3_one_pass":
            return _ke_convolution_3xtf32_one_pass(input, weight, bias, *args)
        return _ke_convolution_3xtf32(input, weight, bias, *args)
"""


class LibraryConv(ast.NodeTransformer):
    """Host steps' `torch.convolution(...)` calls as `_library_convolution(...)`, same arguments."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if ast.unparse(node.func) != CONVOLUTION:
            return node
        return ast.copy_location(
            ast.Call(ast.Name(LIBRARY_CONV_FUNCTION, ast.Load()), node.args, node.keywords), node
        )
