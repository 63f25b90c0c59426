"""BigBird: a sequence too short for block-sparse attention rebuilds every layer's attention module inside forward.

Source: huggingface/transformers@v5.23.0:src/transformers/models/big_bird/modeling_big_bird.py:133-150,1063-1103,1195-1207,1275-1285,1576-1591
Kept: BigBirdModel.forward's max_tokens_to_attend check and its logger.warning, the set_attention_type chain
(model -> encoder -> layer -> attention) that builds a fresh BigBirdSelfAttention and moves the query/key/value
layers over, the two attention classes' __init__ shape (super().__init__(), then nn.Linear layers).
Simplified: one layer, 2 heads of size 4, block-sparse attention is a banded mask over full attention,
no cross attention, no cache, no output projections.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class BigBirdConfig:
    hidden_size = 8
    num_attention_heads = 2
    attention_type = "block_sparse"
    block_size = 2
    num_random_blocks = 1
    use_bias = True


class BigBirdSelfAttention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size, bias=config.use_bias)
        self.key = nn.Linear(config.hidden_size, self.all_head_size, bias=config.use_bias)
        self.value = nn.Linear(config.hidden_size, self.all_head_size, bias=config.use_bias)
        self.layer_idx = layer_idx

    def split(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_attention_heads, self.attention_head_size).transpose(1, 2)

    def forward(self, hidden_states):
        q, k, v = self.split(self.query(hidden_states)), self.split(self.key(hidden_states)), self.split(self.value(hidden_states))
        scores = q @ k.transpose(-1, -2) / self.attention_head_size**0.5
        context = scores.softmax(-1) @ v
        return context.transpose(1, 2).reshape(hidden_states.shape)


class BigBirdBlockSparseAttention(nn.Module):
    def __init__(self, config, seed=None):
        super().__init__()
        self.block_size = config.block_size
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.query = nn.Linear(config.hidden_size, config.hidden_size, bias=config.use_bias)
        self.key = nn.Linear(config.hidden_size, config.hidden_size, bias=config.use_bias)
        self.value = nn.Linear(config.hidden_size, config.hidden_size, bias=config.use_bias)
        self.seed = seed

    def forward(self, hidden_states):
        batch, length, _ = hidden_states.shape
        shape = (batch, length, self.num_attention_heads, self.attention_head_size)
        q = self.query(hidden_states).view(shape).transpose(1, 2)
        k = self.key(hidden_states).view(shape).transpose(1, 2)
        v = self.value(hidden_states).view(shape).transpose(1, 2)
        blocks = torch.arange(length, device=hidden_states.device) // self.block_size
        band = (blocks[:, None] - blocks[None, :]).abs() <= 1
        scores = (q @ k.transpose(-1, -2) / self.attention_head_size**0.5).masked_fill(~band, float("-inf"))
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(hidden_states.shape)


class BigBirdAttention(nn.Module):
    def __init__(self, config, seed=None):
        super().__init__()
        self.attention_type = config.attention_type
        self.config = config
        self.seed = seed
        if self.config.attention_type == "original_full":
            self.self = BigBirdSelfAttention(config, layer_idx=seed)
        elif self.config.attention_type == "block_sparse":
            self.self = BigBirdBlockSparseAttention(config, seed)
        else:
            raise ValueError(f"attention_type can either be original_full or block_sparse, but is {self.config.attention_type}")

    def set_attention_type(self, value: str, layer_idx=None):
        if value not in ["original_full", "block_sparse"]:
            raise ValueError(f"attention_type can only be set to either 'original_full' or 'block_sparse', but is {value}")
        # attention type is already correctly set
        if value == self.attention_type:
            return

        self.attention_type = value
        if value == "original_full":
            # copy all weights to new full attention class
            attn_weights = BigBirdSelfAttention(self.config, layer_idx=layer_idx)
        else:
            # copy all weights to new sparse attention class
            attn_weights = BigBirdBlockSparseAttention(self.config, self.seed)

        attn_weights.query = self.self.query
        attn_weights.value = self.self.value
        attn_weights.key = self.self.key
        self.self = attn_weights
        if not self.training:
            self.self.eval()

    def forward(self, hidden_states):
        return hidden_states + self.self(hidden_states)


class BigBirdLayer(nn.Module):
    def __init__(self, config, seed=None):
        super().__init__()
        self.attention_type = config.attention_type
        self.attention = BigBirdAttention(config, seed=seed)

    def set_attention_type(self, value: str, layer_idx=None):
        if value not in ["original_full", "block_sparse"]:
            raise ValueError(f"attention_type can only be set to either 'original_full' or 'block_sparse', but is {value}")
        # attention type is already correctly set
        if value == self.attention_type:
            return
        self.attention_type = value
        self.attention.set_attention_type(value, layer_idx=layer_idx)

    def forward(self, hidden_states):
        return self.attention(hidden_states)


class BigBirdEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention_type = config.attention_type
        self.layer = nn.ModuleList([BigBirdLayer(config, seed=0)])

    def set_attention_type(self, value: str):
        if value not in ["original_full", "block_sparse"]:
            raise ValueError(f"attention_type can only be set to either 'original_full' or 'block_sparse', but is {value}")
        # attention type is already correctly set
        if value == self.attention_type:
            return
        self.attention_type = value
        for i, layer in enumerate(self.layer):
            layer.set_attention_type(value, layer_idx=i)

    def forward(self, hidden_states):
        for layer in self.layer:
            hidden_states = layer(hidden_states)
        return hidden_states


class BigBirdModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.attention_type = self.config.attention_type
        self.embeddings = nn.Embedding(32, config.hidden_size)
        self.encoder = BigBirdEncoder(config)

    def set_attention_type(self, value: str):
        if value not in ["original_full", "block_sparse"]:
            raise ValueError(f"attention_type can only be set to either 'original_full' or 'block_sparse', but is {value}")
        # attention type is already correctly set
        if value == self.attention_type:
            return
        self.attention_type = value
        self.encoder.set_attention_type(value)

    def forward(self, input_ids):
        seq_length = input_ids.shape[1]
        # in order to use block_sparse attention, sequence_length has to be at least
        # bigger than all global attentions and sliding and random tokens
        max_tokens_to_attend = (5 + 2 * self.config.num_random_blocks) * self.config.block_size
        if self.attention_type == "block_sparse" and seq_length <= max_tokens_to_attend:
            # change attention_type from block_sparse to original_full
            logger.warning(
                "Attention type 'block_sparse' is not possible if sequence_length: "
                f"{seq_length} <= {max_tokens_to_attend}. Changing attention type to 'original_full'..."
            )
            self.set_attention_type("original_full")
        return self.encoder(self.embeddings(input_ids))


model = torch.compile(BigBirdModel(BigBirdConfig()).eval())


def make():
    torch.manual_seed(0)
    long_ids = torch.randint(0, 32, (1, 20))
    short_ids = torch.randint(0, 32, (1, 6))
    # the long input keeps block-sparse attention; the short one switches the model to full attention
    return BigBirdModel(BigBirdConfig()).eval(), [(long_ids,), (short_ids,)]
