"""MRA self-attention without its CUDA kernel: `mra2_attention` returns `torch.zeros_like(query).requires_grad_()`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/mra/modeling_mra.py:345-366,520-610
Census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10 (MraModel eval, modeling_mra.py:364 "Unsupported Tensor.requires_grad_()"); corpus issue #26.
Kept: the module-level `mra_cuda_kernel = None` fallback, mra2_attention's
early return and block-size validation, and MraSelfAttention's projections,
the `num_block` computation from config, the mask expansion and the
context reshape.
Simplified: no kernel loading, the kernel path after the early return is the
reshape only; 2 heads of 4.
"""
import torch
from torch import nn

mra_cuda_kernel = None


def mra2_attention(
    query,
    key,
    value,
    mask,
    num_blocks,
    approx_mode,
    block_size=32,
    initial_prior_first_n_blocks=0,
    initial_prior_diagonal_n_blocks=0,
):
    """
    Use Mra to approximate self-attention.
    """
    if mra_cuda_kernel is None:
        return torch.zeros_like(query).requires_grad_()

    batch_size, num_head, seq_len, head_dim = query.size()
    meta_batch = batch_size * num_head

    if seq_len % block_size != 0:
        raise ValueError("sequence length must be divisible by the block_size.")
    return value


class MraConfig:
    hidden_size = 8
    num_attention_heads = 2
    max_position_embeddings = 64
    block_per_row = 4
    approx_mode = "full"
    initial_prior_first_n_blocks = 0
    initial_prior_diagonal_n_blocks = 0
    attention_probs_dropout_prob = 0.0


class MraSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

        self.num_block = (config.max_position_embeddings // 32) * config.block_per_row
        self.num_block = min(self.num_block, int((config.max_position_embeddings // 32) ** 2))

        self.approx_mode = config.approx_mode
        self.initial_prior_first_n_blocks = config.initial_prior_first_n_blocks
        self.initial_prior_diagonal_n_blocks = config.initial_prior_diagonal_n_blocks

    def forward(self, hidden_states, attention_mask=None):
        batch_size, seq_len, _ = hidden_states.shape
        query_layer = self.query(hidden_states).view(batch_size, -1, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        key_layer = self.key(hidden_states).view(batch_size, -1, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        value_layer = self.value(hidden_states).view(batch_size, -1, self.num_attention_heads, self.attention_head_size).transpose(1, 2)

        # revert changes made by get_extended_attention_mask
        attention_mask = 1.0 + attention_mask / 10000.0
        attention_mask = (
            attention_mask.squeeze().repeat(1, self.num_attention_heads, 1).reshape(batch_size * self.num_attention_heads, seq_len).int()
        )

        context_layer = mra2_attention(
            query_layer.float(),
            key_layer.float(),
            value_layer.float(),
            attention_mask.float(),
            self.num_block,
            approx_mode=self.approx_mode,
            initial_prior_first_n_blocks=self.initial_prior_first_n_blocks,
            initial_prior_diagonal_n_blocks=self.initial_prior_diagonal_n_blocks,
        )
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(*new_context_layer_shape)
        return (context_layer,)


attention = torch.compile(MraSelfAttention(MraConfig()))


def make():
    torch.manual_seed(0)
    mask = torch.zeros(1, 1, 1, 6)
    return MraSelfAttention(MraConfig()), [(torch.randn(1, 6, 8), mask)]
