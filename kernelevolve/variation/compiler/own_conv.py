"""Our Triton implicit-GEMM convolution in place of the 2-D convolutions Inductor leaves to cuDNN.

`torch.convolution(...)` calls of the host steps (2-D, not transposed, any stride, padding,
dilation and groups) become `_conv2d(...)`: output pixels x output channels as a GEMM over
input channels x kernel taps, with the bias fused, written in the layout Inductor's next kernels
expect (its `assert_size_stride` after the call gives it). fp32 uses IEEE dot products.
"""

from __future__ import annotations

import ast

CONV_TUNABLES = (
    "CONV_BLOCK_M = 64  # tune: 32, 64, 128",
    "CONV_BLOCK_N = 32  # tune: 16, 32, 64, 128",
    "CONV_BLOCK_K = 32  # tune: 16, 32, 64",
    "CONV_WARPS = 4  # tune: 2, 4, 8",
    "CONV_STAGES = 2  # tune: 1, 2, 3, 4",
)

CONV_SOURCE = '''
@triton.jit
def _ke_conv2d_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, N, H, W, OH, OW, KH, KW, CG, COG,
    sxn, sxc, sxh, sxw, swo, swc, swh, sww, syn, syc, syh, syw,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    HAS_BIAS: tl.constexpr, IEEE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    group = tl.program_id(1)
    tiles_n = tl.cdiv(COG, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    pixels = N * OH * OW
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n = (offs_m // (OH * OW)).to(tl.int64)
    rest = offs_m % (OH * OW)
    oh = rest // OW
    ow = rest % OW
    offs_co = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    co = (group * COG + offs_co).to(tl.int64)
    taps = KH * KW
    depth = CG * taps
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, depth, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        c = offs_k // taps
        tap = offs_k % taps
        kh = tap // KW
        kw = tap % KW
        ih = oh[:, None] * stride_h - pad_h + kh[None, :] * dil_h
        iw = ow[:, None] * stride_w - pad_w + kw[None, :] * dil_w
        cin = (group * CG + c).to(tl.int64)
        x_mask = (offs_m[:, None] < pixels) & (offs_k[None, :] < depth)
        x_mask = x_mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(
            x_ptr + n[:, None] * sxn + cin[None, :] * sxc + ih * sxh + iw * sxw, mask=x_mask, other=0.0
        )
        w_mask = (offs_k[:, None] < depth) & (offs_co[None, :] < COG)
        b = tl.load(
            w_ptr + co[None, :] * swo + c[:, None] * swc + kh[:, None] * swh + kw[:, None] * sww,
            mask=w_mask,
            other=0.0,
        )
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    inside = (offs_m[:, None] < pixels) & (offs_co[None, :] < COG)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=offs_co < COG, other=0.0).to(tl.float32)[None, :]
    y_ptrs = y_ptr + n[:, None] * syn + co[None, :] * syc + oh[:, None] * syh + ow[:, None] * syw
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=inside)


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, out_size=None, out_stride=None):
    """2-D convolution (cross-correlation, as torch) by our implicit-GEMM kernel."""
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    batch, channels, height, width = x.shape
    out_channels, group_channels, kh, kw = weight.shape
    oh = (height + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (width + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    size = (batch, out_channels, oh, ow)
    if out_stride is not None:
        y = torch.empty_strided(size, out_stride, dtype=x.dtype, device=x.device)
    else:
        y = torch.empty(size, dtype=x.dtype, device=x.device)
    per_group = out_channels // groups
    grid = (triton.cdiv(batch * oh * ow, CONV_BLOCK_M) * triton.cdiv(per_group, CONV_BLOCK_N), groups)
    _ke_conv2d_kernel[grid](
        x, weight, bias if bias is not None else y, y, batch, height, width, oh, ow, kh, kw,
        group_channels, per_group,
        x.stride(0), x.stride(1), x.stride(2), x.stride(3),
        weight.stride(0), weight.stride(1), weight.stride(2), weight.stride(3),
        y.stride(0), y.stride(1), y.stride(2), y.stride(3),
        stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1],
        HAS_BIAS=bias is not None, IEEE=x.dtype == torch.float32,
        BLOCK_M=CONV_BLOCK_M, BLOCK_N=CONV_BLOCK_N, BLOCK_K=CONV_BLOCK_K,
        num_warps=CONV_WARPS, num_stages=CONV_STAGES,
    )
    return y
'''


def conv_substitutable(call: ast.Call) -> bool:
    """A 2-D, non-transposed torch.convolution call with its arguments given by keyword or position."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    transposed = keywords.get("transposed", call.args[6] if len(call.args) > 6 else None)
    stride = keywords.get("stride", call.args[3] if len(call.args) > 3 else None)
    if not (isinstance(transposed, ast.Constant) and transposed.value is False):
        return False
    return isinstance(stride, (ast.Tuple, ast.List)) and len(stride.elts) == 2


class OwnConv(ast.NodeTransformer):
    """Rewrite torch.convolution calls as `_conv2d(...)` in the layout the following assert recorded."""

    def __init__(self, layouts: dict[str, tuple[str, str]]) -> None:
        self.layouts = layouts

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        call = node.value
        if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "torch.convolution"):
            return node
        names = [
            "input",
            "weight",
            "bias",
            "stride",
            "padding",
            "dilation",
            "transposed",
            "output_padding",
            "groups",
        ]
        values = dict(zip(names, call.args, strict=False))
        values.update({k.arg: k.value for k in call.keywords if k.arg})
        keywords = [
            ast.keyword(arg=k, value=values[k])
            for k in ("bias", "stride", "padding", "dilation", "groups")
            if k in values
        ]
        target = ast.unparse(node.targets[0])
        if target in self.layouts:
            size, stride = self.layouts[target]
            keywords += [
                ast.keyword(arg="out_size", value=ast.parse(size, mode="eval").body),
                ast.keyword(arg="out_stride", value=ast.parse(stride, mode="eval").body),
            ]
        node.value = ast.Call(
            func=ast.Name("_conv2d", ast.Load()), args=[values["input"], values["weight"]], keywords=keywords
        )
        return node
