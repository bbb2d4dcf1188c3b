"""Our kernels in place of the fused transformer encoder layer Inductor keeps, for strict-mode compiler seeds.

nn.TransformerEncoderLayer with `batch_first=True` in eval mode takes PyTorch's fast path, one op,
`aten._transformer_encoder_layer_fwd`, which Inductor leaves as a fallback call: KernelBench's L3/32
(ConvolutionalVisionTransformer, six such layers) had no strict result. Each such call in the host steps
becomes a call of `_own_transformer_encoder_layer`, with the op's signature, doing what the op does on a
dense (not nested) batch-first input without a mask:
- the QKV projection in our GEMM (`_matmul`, own_gemm.py), the heads as strided views of its output, our
  flash attention (`_ke_attention`, own_attention.py) written straight into the (B, S, H, D) layout the
  output projection reads as (B*S, E), and the output projection in our GEMM;
- the residual add, the projection's bias and the layer norm in one row kernel (`_ke_residual_norm_kernel`),
  before or after each block as `norm_first` says;
- the feed-forward block as two GEMMs with ReLU or exact GELU (`use_gelu`) applied in place between them,
  its second bias, residual and norm again in the row kernel.
A mask or a nested tensor is refused with an error (the candidate fails and the search records why). The
code is kernels/encoder.py; it needs the GEMM and attention sources, which render.py includes with it.
"""

from __future__ import annotations

from kernelevolve.variation.kernels import kernel_source

# the fused op, and the helper (in ENCODER_SOURCE) that takes its place
ENCODER_OPS = {
    "torch.ops.aten._transformer_encoder_layer_fwd.default": "_own_transformer_encoder_layer",
}

# the kernels and the helper (kernels/encoder.py); a blank line first, as in GEMM_SOURCE
ENCODER_SOURCE = "\n" + kernel_source("encoder")
