# good: KernelBench level-3 residual block in training mode, LLM style: the input converted with
# `x.to(memory_format=torch.channels_last)`, the convolutions by the module (permissive), each BatchNorm2d
# in Triton reading NHWC through `x.stride()` (one program per channel, batch statistics, running
# statistics moved in place, num_batches_tracked on the host), ReLU fused, the identity added in the second
# kernel before its ReLU (fused residual add); the output stays channels_last; cudnn flags untouched
# spec: kb_residual_block
# strict: false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn2d_train_kernel(
    x_ptr,
    res_ptr,
    w_ptr,
    b_ptr,
    rm_ptr,
    rv_ptr,
    out_ptr,
    N,
    C,
    H,
    W,
    sn,
    sc,
    sh,
    sw,
    rsn,
    rsc,
    rsh,
    rsw,
    eps,
    momentum,
    ADD_RESIDUAL: tl.constexpr,
    BLOCK: tl.constexpr,
):
    c = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    count = N * H * W
    mask = offs < count
    n = offs // (H * W)
    hw = offs % (H * W)
    h = hw // W
    w = hw % W
    ptrs = n * sn + c * sc + h * sh + w * sw
    x = tl.load(x_ptr + ptrs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / count
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / count
    y = d / tl.sqrt(var + eps) * tl.load(w_ptr + c) + tl.load(b_ptr + c)
    if ADD_RESIDUAL:
        y += tl.load(res_ptr + n * rsn + c * rsc + h * rsh + w * rsw, mask=mask, other=0.0)
    tl.store(out_ptr + ptrs, tl.maximum(y, 0.0), mask=mask)
    tl.store(rm_ptr + c, (1.0 - momentum) * tl.load(rm_ptr + c) + momentum * mean)
    tl.store(rv_ptr + c, (1.0 - momentum) * tl.load(rv_ptr + c) + momentum * var * count / (count - 1))


def bn_relu(x, bn, residual=None):
    N, C, H, W = x.shape
    N, C, H, W = int(N), int(C), int(H), int(W)
    out = torch.empty_like(x)  # keeps channels_last
    res = residual if residual is not None else x
    bn.num_batches_tracked += 1
    bn2d_train_kernel[(C,)](
        x,
        res,
        bn.weight,
        bn.bias,
        bn.running_mean,
        bn.running_var,
        out,
        N,
        C,
        H,
        W,
        *x.stride(),
        *res.stride(),
        bn.eps,
        bn.momentum,
        ADD_RESIDUAL=residual is not None,
        BLOCK=triton.next_power_of_2(N * H * W),
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        x = x.to(memory_format=torch.channels_last)
        identity = x
        out = bn_relu(self.conv1(x), self.bn1)
        out = bn_relu(self.conv2(out), self.bn2, residual=identity)
        return out
