"""Small references in KernelBench's form (a `Model`, `get_inputs`, `get_init_inputs`), one per kind of
problem the harness treats differently: scalar and integer outputs, cumulative ops, a bool mask input, a
Python float input, batched and transposed matmuls, keepdim reductions with a dim from the init inputs,
level-2 fusions (GEMM epilogues, ConvTranspose, BatchNorm/GroupNorm/Dropout in training mode) and
level-3 blocks (an MLP, a residual block, an LSTM cell returning a tuple). Written for this suite at
CPU-friendly sizes, structurally like the KernelBench problems of the same kind.
"""

from __future__ import annotations

_HEADER = """
import torch
import torch.nn as nn
import torch.nn.functional as F
"""


def _ref(model: str, tail: str) -> str:
    return _HEADER + "\n\n" + model.strip() + "\n\n\n" + tail.strip() + "\n"


_NO_INIT = """

def get_init_inputs():
    return []
"""

MSE_LOSS = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)
""",
    """
batch = 24
dim = 30


def get_inputs():
    return [torch.randn(batch, dim), torch.randn(batch, dim)]
"""
    + _NO_INIT,
)

KL_DIV = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")
""",
    """
batch = 16
classes = 40


def get_inputs():
    return [torch.randn(batch, classes).softmax(dim=-1), torch.randn(batch, classes).softmax(dim=-1)]
"""
    + _NO_INIT,
)

HINGE_LOSS = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))
""",
    """
batch = 64


def get_inputs():
    return [torch.randn(batch, 1), torch.randint(0, 2, (batch,)).float() * 2 - 1]
"""
    + _NO_INIT,
)

CROSS_ENTROPY = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)
""",
    """
batch = 20
classes = 12


def get_inputs():
    return [torch.randn(batch, classes), torch.randint(0, classes, (batch,))]
"""
    + _NO_INIT,
)

TRIPLET_MARGIN = _ref(
    """
class Model(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.loss_fn = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)
""",
    """
batch = 16
dim = 36


def get_inputs():
    return [torch.randn(batch, dim), torch.randn(batch, dim), torch.randn(batch, dim)]


def get_init_inputs():
    return [1.0]
""",
)

ARGMAX_DIM = _ref(
    """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)
""",
    """
batch = 4
dim1 = 24
dim2 = 18


def get_inputs():
    return [torch.randn(batch, dim1, dim2)]


def get_init_inputs():
    return [1]
""",
)

CUMSUM_REVERSE = _ref(
    """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)
""",
    """
batch = 6
length = 50


def get_inputs():
    return [torch.randn(batch, length)]


def get_init_inputs():
    return [1]
""",
)

CUMPROD = CUMSUM_REVERSE.replace(
    "torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)", "torch.cumprod(x, dim=self.dim)"
).replace("torch.randn(batch, length)", "torch.rand(batch, length) + 0.5")

MASKED_CUMSUM = _ref(
    """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=self.dim)
""",
    """
batch = 6
length = 50


def get_inputs():
    x = torch.randn(batch, length)
    return [x, torch.randint(0, 2, x.shape).bool()]


def get_init_inputs():
    return [1]
""",
)

FROBENIUS_NORM = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        norm = torch.norm(x, p="fro")
        return x / norm
""",
    """
batch = 2
channels = 3
height = 10
width = 14


def get_inputs():
    return [torch.randn(batch, channels, height, width)]
"""
    + _NO_INIT,
)

MATRIX_SCALAR = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return A * s
""",
    """
M = 30
N = 44


def get_inputs():
    return [torch.rand(M, N), 3.14]
"""
    + _NO_INIT,
)

BMM = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)
""",
    """
batch = 3
m = 20
k = 36
n = 28


def get_inputs():
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]
"""
    + _NO_INIT,
)

MATMUL_TRANSPOSED_A = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)
""",
    """
M = 24
K = 40
N = 20


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]
"""
    + _NO_INIT,
)

DIAG_MATMUL = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.diag(A) @ B
""",
    """
N = 32
M = 26


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]
"""
    + _NO_INIT,
)

MEAN_KEEPDIM = _ref(
    """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim, keepdim=True)
""",
    """
batch = 4
dim1 = 22
dim2 = 30


def get_inputs():
    return [torch.randn(batch, dim1, dim2)]


def get_init_inputs():
    return [1]
""",
)

# Level 2: a GEMM with a bias of the model's own after the Linear's, a scaling, a clamp and an activation.
GEMM_SCALE_CLAMP_GELU = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, out_features, scale, clamp_min, clamp_max):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.gemm(x) + self.bias
        x = x * self.scale
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        return F.gelu(x)
""",
    """
batch = 18
in_features = 40
out_features = 28


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features, 0.5, -1.0, 1.5]
""",
)

CONV_TRANSPOSE_TANH = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scale):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.scale = scale

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.tanh(x - self.bias) * self.scale
        return x
""",
    """
batch = 2
in_channels = 4
out_channels = 6
height = width = 5
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, 2.0]
""",
)

# Level 2, in training mode (as KernelBench builds them): batch statistics, running statistics moved.
GEMM_BATCHNORM_RELU = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return torch.relu(self.bn(self.gemm(x)))
""",
    """
batch = 16
in_features = 24
out_features = 20


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
""",
)

CONV_GROUPNORM = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.group_norm(x)
        return x * torch.sigmoid(x)
""",
    """
batch = 2
in_channels = 3
out_channels = 8
height = width = 9
kernel_size = 3
groups = 4


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
""",
)

LINEAR_DROPOUT_SOFTMAX = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        x = self.matmul(x)
        x = self.dropout(x)
        return torch.softmax(x, dim=1)
""",
    """
batch = 8
in_features = 20
out_features = 16


def get_inputs():
    return [torch.rand(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features, 0.2]
""",
)

# Level 3.
MLP = _ref(
    """
class Model(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            layers.append(nn.ReLU())
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)
""",
    """
batch = 6
input_size = 30
layer_sizes = [40, 24]
output_size = 10


def get_inputs():
    return [torch.randn(batch, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
""",
)

RESIDUAL_BLOCK = _ref(
    """
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        identity = x
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + identity)
""",
    """
batch = 2
channels = 4
height = width = 6


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels]
""",
)

LSTM_CELL = _ref(
    """
class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.ih = nn.Linear(input_size, 4 * hidden_size)
        self.hh = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x, h, c):
        gates = self.ih(x) + self.hh(h)
        i, f, g, o = gates.chunk(4, dim=1)
        c_next = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_next = torch.sigmoid(o) * torch.tanh(c_next)
        return h_next, c_next
""",
    """
batch = 5
input_size = 12
hidden_size = 16


def get_inputs():
    return [torch.randn(batch, input_size), torch.randn(batch, hidden_size), torch.randn(batch, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
""",
)

# torch.max with a dim returns a named tuple (values, indices): two outputs, one of them int64.
MAX_WITH_INDICES = _ref(
    """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim)
""",
    """
batch = 5
dim1 = 20
dim2 = 12


def get_inputs():
    return [torch.randn(batch, dim1, dim2)]


def get_init_inputs():
    return [2]
""",
)

# Level 3: the initial hidden state drawn in forward (as KernelBench's RNN problems draw h0 and c0).
GRU_CELL_RANDOM_H0 = _ref(
    """
class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x):
        h0 = torch.randn(x.size(0), self.hidden_size, device=x.device)
        return self.cell(x, h0)
""",
    """
batch = 6
input_size = 10
hidden_size = 12


def get_inputs():
    return [torch.randn(batch, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
""",
)

# BatchNorm with momentum=None keeps a cumulative average: the factor is 1 / num_batches_tracked.
BATCHNORM_CUMULATIVE = _ref(
    """
class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features, momentum=None)

    def forward(self, x):
        return self.bn(x)
""",
    """
batch = 10
features = 14


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features]
""",
)

# A boolean output (a comparison), and a depthwise convolution with a dilation from the init inputs.
GREATER_THAN_MEAN = _ref(
    """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x > x.mean(dim=self.dim, keepdim=True)
""",
    """
rows = 7
cols = 33


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [1]
""",
)

DEPTHWISE_CONV = _ref(
    """
class Model(nn.Module):
    def __init__(self, channels, kernel_size, dilation):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=dilation, dilation=dilation, groups=channels)

    def forward(self, x):
        return self.conv(x)
""",
    """
batch = 2
channels = 5
height = 9
width = 11


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels, 3, 2]
""",
)

# Level 3: a recurrent layer over a short sequence, the last step's hidden state through a Linear.
LSTM_SEQUENCE_FC = _ref(
    """
class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])
""",
    """
batch = 3
seq_len = 5
input_size = 8
hidden_size = 12
output_size = 6


def get_inputs():
    return [torch.randn(batch, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
""",
)

SOURCES: dict[str, str] = {
    "kb_mse_loss": MSE_LOSS,
    "kb_kl_div": KL_DIV,
    "kb_hinge_loss": HINGE_LOSS,
    "kb_cross_entropy": CROSS_ENTROPY,
    "kb_triplet_margin": TRIPLET_MARGIN,
    "kb_argmax_dim": ARGMAX_DIM,
    "kb_cumsum_reverse": CUMSUM_REVERSE,
    "kb_cumprod": CUMPROD,
    "kb_masked_cumsum": MASKED_CUMSUM,
    "kb_frobenius_norm": FROBENIUS_NORM,
    "kb_matrix_scalar": MATRIX_SCALAR,
    "kb_bmm": BMM,
    "kb_matmul_transposed_a": MATMUL_TRANSPOSED_A,
    "kb_diag_matmul": DIAG_MATMUL,
    "kb_mean_keepdim": MEAN_KEEPDIM,
    "kb_gemm_scale_clamp_gelu": GEMM_SCALE_CLAMP_GELU,
    "kb_conv_transpose_tanh": CONV_TRANSPOSE_TANH,
    "kb_gemm_batchnorm_relu": GEMM_BATCHNORM_RELU,
    "kb_conv_groupnorm_swish": CONV_GROUPNORM,
    "kb_linear_dropout_softmax": LINEAR_DROPOUT_SOFTMAX,
    "kb_mlp": MLP,
    "kb_residual_block": RESIDUAL_BLOCK,
    "kb_lstm_cell": LSTM_CELL,
    "kb_max_with_indices": MAX_WITH_INDICES,
    "kb_gru_cell_random_h0": GRU_CELL_RANDOM_H0,
    "kb_batchnorm_cumulative": BATCHNORM_CUMULATIVE,
    "kb_greater_than_mean": GREATER_THAN_MEAN,
    "kb_depthwise_conv": DEPTHWISE_CONV,
    "kb_lstm_sequence_fc": LSTM_SEQUENCE_FC,
}
