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

# Round 11: training-mode norms with running statistics, dropout at p=0, level-2 fusions ending in a
# reduction (a 0-d output), level-3 transformer pieces with buffers, and several outputs of mixed dtypes
# or non-contiguous views.
INSTANCENORM_RUNNING = _ref(
    """
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, affine=True, track_running_stats=True)

    def forward(self, x):
        return self.norm(x)
""",
    """
batch = 3
channels = 5
height = 6
width = 7


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels]
""",
)

CONV_BN_GELU_POOL = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = F.gelu(x)
        return x.mean(dim=(2, 3))
""",
    """
batch = 2
in_channels = 3
out_channels = 6
height = width = 8
kernel_size = 3


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
""",
)

LINEAR_DROPOUT0_GELU_LSE = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p=0.0)

    def forward(self, x):
        x = self.dropout(self.linear(x))
        x = F.gelu(x)
        return torch.logsumexp(x, dim=1, keepdim=True)
""",
    """
batch = 10
in_features = 24
out_features = 20


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
""",
)

GEMM_SIGMOID_SUM_LSE = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, hidden):
        super().__init__()
        self.linear = nn.Linear(in_features, hidden)

    def forward(self, x):
        x = torch.sigmoid(self.linear(x))
        x = torch.sum(x, dim=1)
        return torch.logsumexp(x, dim=0)
""",
    """
batch = 12
in_features = 18
hidden = 22


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, hidden]
""",
)

TRANSFORMER_LAYER = _ref(
    """
class Model(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=dim_feedforward, dropout=0.0, batch_first=True
        )

    def forward(self, x):
        return self.layer(x)
""",
    """
batch = 2
seq = 6
d_model = 16
nhead = 2
dim_feedforward = 32


def get_inputs():
    return [torch.randn(batch, seq, d_model)]


def get_init_inputs():
    return [d_model, nhead, dim_feedforward]
""",
)

MINGPT_CAUSAL_ATTENTION = _ref(
    """
class Model(nn.Module):
    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(0.0)
        self.resid_dropout = nn.Dropout(0.0)
        self.register_buffer(
            "bias", torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen)
        )
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))
""",
    """
batch = 2
seq = 7
n_embd = 16
n_head = 4
max_seqlen = 8


def get_inputs():
    return [torch.randn(batch, seq, n_embd)]


def get_init_inputs():
    return [n_embd, n_head, max_seqlen]
""",
).replace("import torch\n", "import math\n\nimport torch\n", 1)

GRU_SEQUENCE = _ref(
    """
class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True)

    def forward(self, x):
        output, h_n = self.gru(x)
        return output, h_n
""",
    """
batch = 3
seq = 5
input_size = 10
hidden_size = 12


def get_inputs():
    return [torch.randn(batch, seq, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
""",
)

FREXP = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        mantissa, exponent = torch.frexp(x)
        return mantissa, exponent
""",
    """
rows = 16
cols = 40


def get_inputs():
    return [torch.randn(rows, cols) * 100.0]
"""
    + _NO_INIT,
)

GLOBAL_ARGMAX_MAX = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x), torch.amax(x)
""",
    """
rows = 20
cols = 50


def get_inputs():
    return [torch.randn(rows, cols)]
"""
    + _NO_INIT,
)

LINEAR_SPLIT_HEADS = _ref(
    """
class Model(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.shape
        return self.proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
""",
    """
batch = 2
seq = 5
d_model = 24
n_head = 3


def get_inputs():
    return [torch.randn(batch, seq, d_model)]


def get_init_inputs():
    return [d_model, n_head]
""",
)

BN_DROPOUT_EVAL = _ref(
    """
class Model(nn.Module):
    def __init__(self, features, p):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.bn = nn.BatchNorm1d(features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(torch.relu(self.bn(self.fc(x))))
""",
    """
batch = 9
features = 14


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, 0.5]
""",
)

BUFFER_PROJECTION = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.register_buffer("projection", torch.randn(in_features, out_features) / in_features**0.5)
        self.gain = nn.Parameter(torch.randn(out_features))
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, out_features))

    def forward(self, x):
        return torch.tanh(x @ self.projection) * self.gain + self.offset
""",
    """
batch = 11
in_features = 20
out_features = 13


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
""",
)

LAYERNORM_LINEAR_TRAIN = _ref(
    """
class Model(nn.Module):
    def __init__(self, features, out_features):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.fc = nn.Linear(features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(self.norm(x)))
""",
    """
batch = 10
features = 24
out_features = 16


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, out_features]
""",
)

BATCHNORM_RELU_TRAIN = _ref(
    """
class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return torch.relu(self.bn(x))
""",
    """
batch = 16
features = 12


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features]
""",
)

VANILLA_RNN_STATE = _ref(
    """
class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()

    def forward(self, x, initial_hidden=None):
        if initial_hidden is not None:
            self.hidden.copy_(initial_hidden)
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        return self.h2o(self.hidden)
""",
    """
batch_size = 6
input_size = 20
hidden_size = 24
output_size = 10


def get_inputs():
    return [torch.rand(batch_size, input_size), torch.rand(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
""",
)

# KernelBench's first VanillaRNN form: no initial_hidden input, so the hidden state a call leaves in the
# plain attribute is the next call's (every output depends on every call before it)
VANILLA_RNN_CARRIED = VANILLA_RNN_STATE.replace(
    """    def forward(self, x, initial_hidden=None):
        if initial_hidden is not None:
            self.hidden.copy_(initial_hidden)
""",
    """    def forward(self, x):
""",
).replace(
    "return [torch.rand(batch_size, input_size), torch.rand(batch_size, hidden_size)]",
    "return [torch.rand(batch_size, input_size)]",
)

LSTM_NESTED_STATE = _ref(
    """
class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True)

    def forward(self, x):
        return self.lstm(x)
""",
    """
batch = 3
seq = 4
input_size = 9
hidden_size = 10


def get_inputs():
    return [torch.randn(batch, seq, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
""",
)

# Round 18: KernelBench level-2 forms of the training-mode norms upcoming sweeps meet: BatchNorm1d with
# its eps and momentum from the init inputs between a GEMM and a broadcast bias / divide / swish
# epilogue, and InstanceNorm2d at its defaults (no affine, no running statistics) after a convolution.
MATMUL_BN_BIAS_DIVIDE_SWISH = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, out_features, bn_eps=1e-5, bn_momentum=0.1, bias_shape=(1,), divide_value=1.0):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.divide_value = divide_value

    def forward(self, x):
        x = self.matmul(x)
        x = self.bn(x)
        x = x + self.bias
        x = x / self.divide_value
        return x * torch.sigmoid(x)
""",
    """
batch = 12
in_features = 20
out_features = 18


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features, 1e-5, 0.2, (1,), 2.0]
""",
)

CONV_INSTANCENORM_DIVIDE = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divide_by):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.instance_norm = nn.InstanceNorm2d(out_channels)
        self.divide_by = divide_by

    def forward(self, x):
        x = self.conv(x)
        x = self.instance_norm(x)
        return x / self.divide_by
""",
    """
batch = 2
in_channels = 3
out_channels = 5
height = width = 8
kernel_size = 3


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, 2.0]
""",
)

# Round 21: BatchNorm2d / BatchNorm3d and InstanceNorm1d in training mode (running statistics moved), and
# two level-1 activations as training specs, whose backward an honest kernel takes from the saved output.
BATCHNORM2D_TRAIN = _ref(
    """
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(x)
""",
    """
batch = 4
channels = 6
height = 5
width = 7


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels]
""",
)

BATCHNORM3D_TRAIN = _ref(
    """
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm3d(channels, momentum=0.2)

    def forward(self, x):
        return self.bn(x)
""",
    """
batch = 2
channels = 5
depth = 3
height = 4
width = 6


def get_inputs():
    return [torch.randn(batch, channels, depth, height, width)]


def get_init_inputs():
    return [channels]
""",
)

INSTANCENORM1D_RUNNING = _ref(
    """
class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm1d(channels, track_running_stats=True)

    def forward(self, x):
        return self.norm(x)
""",
    """
batch = 3
channels = 7
length = 19


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return [channels]
""",
)

SOFTMAX_TRAIN = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)
""",
    """
batch = 6
dim = 130
"""
    + """

def get_inputs():
    return [torch.randn(batch, dim)]
"""
    + _NO_INIT,
)

TANH_TRAIN = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)
""",
    """
batch = 7
dim = 45


def get_inputs():
    return [torch.randn(batch, dim) * 2.0]
"""
    + _NO_INIT,
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
    "kb_instancenorm_running": INSTANCENORM_RUNNING,
    "kb_conv_bn_gelu_pool": CONV_BN_GELU_POOL,
    "kb_linear_dropout0_gelu_lse": LINEAR_DROPOUT0_GELU_LSE,
    "kb_gemm_sigmoid_sum_lse": GEMM_SIGMOID_SUM_LSE,
    "kb_transformer_layer": TRANSFORMER_LAYER,
    "kb_mingpt_causal_attention": MINGPT_CAUSAL_ATTENTION,
    "kb_gru_sequence": GRU_SEQUENCE,
    "kb_frexp": FREXP,
    "kb_global_argmax_max": GLOBAL_ARGMAX_MAX,
    "kb_linear_split_heads": LINEAR_SPLIT_HEADS,
    "kb_buffer_projection": BUFFER_PROJECTION,
    "kb_vanilla_rnn_state": VANILLA_RNN_STATE,
    "kb_vanilla_rnn_carried": VANILLA_RNN_CARRIED,
    "kb_lstm_nested_state": LSTM_NESTED_STATE,
    "kb_matmul_bn_bias_divide_swish": MATMUL_BN_BIAS_DIVIDE_SWISH,
    "kb_conv_instancenorm_divide": CONV_INSTANCENORM_DIVIDE,
    "kb_batchnorm2d_train": BATCHNORM2D_TRAIN,
    "kb_batchnorm3d_train": BATCHNORM3D_TRAIN,
    "kb_instancenorm1d_running": INSTANCENORM1D_RUNNING,
}

# Not in SOURCES: specs with a mode or a backward of their own (`spec_fixtures.SPECS`).
EVAL_MODE_SOURCES: dict[str, str] = {"kb_bn_dropout_eval": BN_DROPOUT_EVAL}
TRAINING_SOURCES: dict[str, str] = {
    "kb_layernorm_linear_train": LAYERNORM_LINEAR_TRAIN,
    "kb_batchnorm_relu_train": BATCHNORM_RELU_TRAIN,
    "kb_softmax_train": SOFTMAX_TRAIN,
    "kb_tanh_train": TANH_TRAIN,
}

# KernelBench problems that build their inputs in half precision (`torch.randn(..., dtype=torch.float16)`):
# the spec keeps the dtype the inputs are built in, with KernelBench's 1e-2 tolerance (`specs/built_dtype`).
HALF_MATMUL = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)
""",
    """
M = 40
K = 48
N = 36


def get_inputs():
    return [torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)]
"""
    + _NO_INIT,
)

HALF_LAYERNORM = _ref(
    """
class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return self.ln(x)
""",
    """
batch = 4
seq = 6
features = 80


def get_inputs():
    return [torch.randn(batch, seq, features, dtype=torch.float16)]


def get_init_inputs():
    return [features]
""",
)

HALF_TOPK = _ref(
    """
class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.topk(x, self.k, dim=-1)
""",
    """
rows = 12
cols = 70
k = 5


def get_inputs():
    # torch.topk orders tied values arbitrarily, so a row's values differ in their low mantissa bits, which
    # the harness's per-call refresh (flipping only the top ones) keeps distinct: the indices are defined
    magnitude = 1 + torch.argsort(torch.rand(rows, cols), dim=-1) / 1024
    sign = torch.where(torch.rand(rows, cols) < 0.5, -1.0, 1.0)
    return [(sign * magnitude).to(torch.float16)]


def get_init_inputs():
    return [k]
""",
)

BF16_ARGMAX = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=-1)
""",
    """
batch = 3
rows = 9
cols = 100


def get_inputs():
    return [torch.randn(batch, rows, cols, dtype=torch.bfloat16)]
"""
    + _NO_INIT,
)

HALF_MAX_MIN = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.max(x, dim=1), torch.min(x, dim=1)
""",
    """
rows = 10
cols = 60


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]
"""
    + _NO_INIT,
)

HALF_GELU_SCALE = _ref(
    """
class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return F.gelu(x, approximate="tanh") * self.scale
""",
    """
batch = 16
dim = 300


def get_inputs():
    return [torch.randn(batch, dim, dtype=torch.float16)]


def get_init_inputs():
    return [1.5]
""",
)

HALF_SOFTMAX = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)
""",
    """
batch = 14
dim = 90


def get_inputs():
    return [torch.randn(batch, dim, dtype=torch.float16) * 4]
"""
    + _NO_INIT,
)

HALF_EMBEDDING = _ref(
    """
class Model(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embed = nn.Embedding(num_embeddings, embedding_dim, padding_idx=0, dtype=torch.float16)

    def forward(self, ids):
        return self.embed(ids)
""",
    """
batch = 4
seq = 7
num_embeddings = 50
embedding_dim = 24


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch, seq))]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
""",
)

HALF_SUM_DIM = _ref(
    """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)
""",
    """
batch = 6
rows = 300
cols = 20


def get_inputs():
    return [torch.randn(batch, rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return [1]
""",
)

HALF_MLP = _ref(
    """
class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, x):
        return self.net(x)
""",
    """
batch = 10
in_features = 32
hidden = 48
out_features = 16


def get_inputs():
    return [torch.randn(batch, in_features, dtype=torch.float16)]


def get_init_inputs():
    return [in_features, hidden, out_features]
""",
)

HALF_CROSS_ENTROPY = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)
""",
    """
batch = 24
num_classes = 40


def get_inputs():
    return [torch.randn(batch, num_classes, dtype=torch.float16), torch.randint(0, num_classes, (batch,))]
"""
    + _NO_INIT,
)

HALF_JAGGED_SUM = _ref(
    """
class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, values, offsets):
        return torch.stack([values[offsets[i] : offsets[i + 1]].sum(0) for i in range(offsets.numel() - 1)])
""",
    """
segments = 6
total = 40
dim = 20


def get_inputs():
    cuts = torch.randperm(total - 1)[: segments - 1].sort().values + 1
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.full((1,), total)])
    return [torch.randn(total, dim, dtype=torch.float16), offsets]
"""
    + _NO_INIT,
)

HALF_SOURCES: dict[str, str] = {
    "kb_half_matmul": HALF_MATMUL,
    "kb_half_layernorm": HALF_LAYERNORM,
    "kb_half_topk": HALF_TOPK,
    "kb_bf16_argmax": BF16_ARGMAX,
    "kb_half_max_min": HALF_MAX_MIN,
    "kb_half_gelu_scale": HALF_GELU_SCALE,
    "kb_half_softmax": HALF_SOFTMAX,
    "kb_half_embedding": HALF_EMBEDDING,
    "kb_half_sum_dim": HALF_SUM_DIM,
    "kb_half_mlp": HALF_MLP,
    "kb_half_cross_entropy": HALF_CROSS_ENTROPY,
    "kb_half_jagged_sum": HALF_JAGGED_SUM,
}
