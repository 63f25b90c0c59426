"""OpenNMT-py TransformerEncoder builds its padding mask with sequence_mask(src_len), whose
`max_len or lengths.max()` feeds a 0-dim tensor into torch.arange; compiled with dynamic=True.

Source: pytorch/pytorch#93468 (https://github.com/pytorch/pytorch/issues/93468) -- the log names
`sequence_mask` (onmt/utils/misc.py:53) hitting the cache limit; code from
OpenNMT/OpenNMT-py@0436cdd0915534f84d3e8783f3e4193c64eb44d9:onmt/encoders/transformer.py (forward)
and onmt/utils/misc.py (sequence_mask, with the `device=lengths.device` of the 2023 version).
Kept: sequence_mask verbatim, TransformerEncoder.forward (embeddings, mask unsqueeze/expand,
loop over layers, final layer_norm, the `(enc_out, None, src_len)` return), the pre-norm
TransformerEncoderLayer.forward with its `dropout_p > 0` and `parallel_residual` branches.
Simplified: MultiHeadedAttention is a small masked softmax attention (masked_fill on ~mask);
PositionwiseFeedForward is a residual pre-norm 2-layer MLP; embeddings are a plain nn.Embedding;
2 layers, d_model 8, 2 heads.
"""
import torch
import torch.nn as nn


def sequence_mask(lengths, max_len=None):
    """
    Creates a boolean mask from sequence lengths.
    """
    batch_size = lengths.numel()
    max_len = max_len or lengths.max()
    return (
        torch.arange(0, max_len, device=lengths.device)
        .type_as(lengths)
        .repeat(batch_size, 1)
        .lt(lengths.unsqueeze(1))
    )


class MultiHeadedAttention(nn.Module):
    def __init__(self, head_count, model_dim, dropout=0.1):
        super().__init__()
        self.head_count = head_count
        self.dim_per_head = model_dim // head_count
        self.linear_keys = nn.Linear(model_dim, model_dim, bias=False)
        self.linear_values = nn.Linear(model_dim, model_dim, bias=False)
        self.linear_query = nn.Linear(model_dim, model_dim, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.final_linear = nn.Linear(model_dim, model_dim, bias=False)

    def forward(self, key, value, query, mask=None):
        batch_size = key.size(0)

        def shape(x):
            return x.view(batch_size, -1, self.head_count, self.dim_per_head).transpose(1, 2)

        key = shape(self.linear_keys(key))
        value = shape(self.linear_values(value))
        query = shape(self.linear_query(query)) / (self.dim_per_head ** 0.5)
        scores = torch.matmul(query, key.transpose(2, 3)).float()
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e18)
        attn = torch.softmax(scores, dim=-1).to(query.dtype)
        drop_attn = self.dropout(attn)
        context = torch.matmul(drop_attn, value)
        context = context.transpose(1, 2).contiguous().view(batch_size, -1, self.head_count * self.dim_per_head)
        return self.final_linear(context), attn


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1, norm_eps=1e-6):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.layer_norm = nn.LayerNorm(d_model, eps=norm_eps)
        self.dropout_p = dropout
        self.dropout_1 = nn.Dropout(dropout)
        self.dropout_2 = nn.Dropout(dropout)

    def forward(self, x):
        norm_x = self.layer_norm(x)
        inter = self.dropout_1(torch.relu(self.w_1(norm_x)))
        inter = self.w_2(inter)
        inter = self.dropout_2(inter)
        return inter + x


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, heads, d_ff, dropout, attention_dropout,
                 parallel_residual=False, norm_eps=1e-6):
        super().__init__()
        self.self_attn = MultiHeadedAttention(heads, d_model, dropout=attention_dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.parallel_residual = parallel_residual
        self.layer_norm = nn.LayerNorm(d_model, eps=norm_eps)
        self.dropout_p = dropout
        self.dropout = nn.Dropout(dropout)

    def forward(self, layer_in, mask):
        norm_layer_in = self.layer_norm(layer_in)
        context, _ = self.self_attn(
            norm_layer_in, norm_layer_in, norm_layer_in, mask=mask
        )
        if self.dropout_p > 0:
            context = self.dropout(context)
        if self.parallel_residual:
            # feed_forward applies residual, so we remove and apply residual with un-normed
            layer_out = (
                self.feed_forward(norm_layer_in) - norm_layer_in + layer_in + context
            )
        else:
            layer_out = context + layer_in
            layer_out = self.feed_forward(layer_out)

        return layer_out


class TransformerEncoder(nn.Module):
    def __init__(self, num_layers, d_model, heads, d_ff, dropout, attention_dropout,
                 embeddings, norm_eps=1e-6):
        super().__init__()
        self.embeddings = embeddings
        self.transformer = nn.ModuleList(
            [
                TransformerEncoderLayer(d_model, heads, d_ff, dropout, attention_dropout)
                for i in range(num_layers)
            ]
        )
        self.layer_norm = nn.LayerNorm(d_model, eps=norm_eps)

    def forward(self, src, src_len=None):
        """See :func:`EncoderBase.forward()`"""
        enc_out = self.embeddings(src)
        mask = sequence_mask(src_len).unsqueeze(1).unsqueeze(1)
        mask = mask.expand(-1, -1, mask.size(3), -1)
        # Padding mask is now (batch x 1 x slen x slen)
        # 1 to be expanded to number of heads in MHA
        # Run the forward pass of every layer of the tranformer.

        for layer in self.transformer:
            enc_out = layer(enc_out, mask)
        enc_out = self.layer_norm(enc_out)
        return enc_out, None, src_len


def build_encoder():
    return TransformerEncoder(2, 8, 2, 16, 0.1, 0.1, nn.Embedding(20, 8)).eval()


encoder = torch.compile(build_encoder(), dynamic=True)


def make():
    torch.manual_seed(0)
    src_a = torch.randint(0, 20, (2, 5))
    len_a = torch.tensor([5, 3])
    src_b = torch.randint(0, 20, (3, 7))
    len_b = torch.tensor([7, 7, 2])
    return build_encoder(), [(src_a, len_a), (src_b, len_b)]
