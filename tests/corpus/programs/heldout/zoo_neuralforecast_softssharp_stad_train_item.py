"""neuralforecast SOFTS# STAD block: in training, `add_positional_embedding` draws `torch.rand(1, device=...).item() < self.pe_keep_prob` to decide whether to add the positional embedding, and the core is sampled with `torch.multinomial`; eval uses a softmax-weighted mean.

Source: Nixtla/neuralforecast@5ffa0d08b8bea5173d230f4fd23f734896e1e0e3:neuralforecast/models/softssharp.py:15-97
Kept: PositionalEmbedding and STADSharp verbatim (training / eval branches,
the `*args, **kwargs` forward returning `(out, None)`); an encoder layer that
calls it through `self.attention(...)` as the SOFTS TransEncoderLayer does.
Simplified: TransEncoder and the BaseModel windowing are left out; d_series 8,
d_core 4, 3 series, max_len 16. The layer is returned in eval mode; the
harness measures it again after .train(), where the `.item()` draw happens.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEmbedding(nn.Module):
    def __init__(self, d_series, max_len=16):
        super(PositionalEmbedding, self).__init__()
        self.register_buffer("position_embedding", torch.zeros(1, max_len, d_series))

        position = torch.arange(0, max_len).unsqueeze(1).float()
        div_term = torch.exp(
            torch.arange(0, d_series, 2).float()
            * -(torch.log(torch.tensor(10000.0)) / d_series)
        )

        self.position_embedding[:, :, 0::2] = torch.sin(position * div_term)
        self.position_embedding[:, :, 1::2] = torch.cos(position * div_term)

    def forward(self, x, scale=1.0):
        return x + scale * self.position_embedding[:, : x.size(1)]


class STADSharp(nn.Module):
    """
    STar Aggregate Dispatch Module with stochastic variable-position encoding.
    """

    def __init__(self, d_series, d_core, dropout_rate=0.1, pe_keep_prob=0.5):
        super(STADSharp, self).__init__()

        self.positional_embedding = PositionalEmbedding(d_series)

        self.pe_scale = nn.Parameter(torch.tensor(1.0))
        self.pe_keep_prob = pe_keep_prob

        self.gen1 = nn.Linear(d_series, d_series)
        self.gen2 = nn.Linear(d_series, d_core)
        self.gen3 = nn.Linear(d_series + d_core, d_series)
        self.gen4 = nn.Linear(d_series, d_series)

        self.dropout1 = nn.Dropout(dropout_rate)
        self.dropout2 = nn.Dropout(dropout_rate)
        self.dropout3 = nn.Dropout(dropout_rate)

    def add_positional_embedding(self, input):
        if self.training:
            if torch.rand(1, device=input.device).item() < self.pe_keep_prob:
                return self.positional_embedding(input, scale=self.pe_scale)
            return input

        return self.positional_embedding(
            input,
            scale=self.pe_keep_prob * self.pe_scale,
        )

    def forward(self, input, *args, **kwargs):
        batch_size, channels, d_series = input.shape

        input = self.add_positional_embedding(input)

        combined_mean = F.gelu(self.gen1(input))
        combined_mean = self.dropout1(combined_mean)
        combined_mean = self.gen2(combined_mean)

        if self.training:
            ratio = F.softmax(torch.nan_to_num(combined_mean), dim=1)
            ratio = ratio.permute(0, 2, 1)
            ratio = ratio.reshape(-1, channels)
            indices = torch.multinomial(ratio, 1)
            indices = indices.view(batch_size, -1, 1).permute(0, 2, 1)
            combined_mean = torch.gather(combined_mean, 1, indices)
            combined_mean = combined_mean.repeat(1, channels, 1)
        else:
            weight = F.softmax(combined_mean, dim=1)
            combined_mean = torch.sum(
                combined_mean * weight, dim=1, keepdim=True
            ).repeat(1, channels, 1)

        combined_mean = self.dropout2(combined_mean)

        combined_mean_cat = torch.cat([input, combined_mean], -1)
        combined_mean_cat = F.gelu(self.gen3(combined_mean_cat))
        combined_mean_cat = self.dropout3(combined_mean_cat)
        combined_mean_cat = self.gen4(combined_mean_cat)

        return combined_mean_cat, None


class TransEncoderLayer(nn.Module):
    def __init__(self, attention, hidden_size, conv_hidden_size=None, dropout=0.1, activation="relu"):
        super().__init__()
        conv_hidden_size = conv_hidden_size or 4 * hidden_size
        self.attention = attention
        self.conv1 = nn.Conv1d(in_channels=hidden_size, out_channels=conv_hidden_size, kernel_size=1)
        self.conv2 = nn.Conv1d(in_channels=conv_hidden_size, out_channels=hidden_size, kernel_size=1)
        self.norm1 = nn.LayerNorm(hidden_size)
        self.norm2 = nn.LayerNorm(hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x, attn_mask=None):
        new_x, attn = self.attention(x, x, x, attn_mask=attn_mask)
        x = x + self.dropout(new_x)
        y = x = self.norm1(x)
        y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        return self.norm2(x + y), attn


def build_layer():
    return TransEncoderLayer(STADSharp(8, 4, dropout_rate=0.0, pe_keep_prob=0.5), 8, 16, dropout=0.0)


def make():
    torch.manual_seed(0)
    layer = build_layer().eval()
    x = torch.randn(2, 3, 8)
    return layer, [(x,), (x[:1],)]


def predict_and_train():
    layer = torch.compile(build_layer())
    layer.eval()
    layer.train()
    return layer
