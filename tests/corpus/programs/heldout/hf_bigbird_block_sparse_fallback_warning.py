"""BigBird model forward: too-short sequences log a warning and switch `self.attention_type` to 'original_full' on the module.

Source: huggingface/transformers@v5.23.0:src/transformers/models/big_bird/modeling_big_bird.py:1531-1677
Kept: the token_type_ids buffer slice / zeros, max_tokens_to_attend from
config, the `attention_type == "block_sparse" and seq_length <= ...` check
with logger.warning (an f-string over config values) and set_attention_type
mutating the model, and the block_sparse padding path with `padding_len`.
Simplified: the encoder is one linear; block size 2, 1 random block.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class BigBirdConfig:
    block_size = 2
    num_random_blocks = 1
    attention_type = "block_sparse"


class BigBirdModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.attention_type = config.attention_type
        self.block_size = config.block_size
        self.embeddings = nn.Embedding(10, 8)
        self.register_buffer("token_type_ids", torch.zeros(1, 32, dtype=torch.long), persistent=False)
        self.encoder = nn.Linear(8, 8)

    def set_attention_type(self, value: str):
        if value not in ["original_full", "block_sparse"]:
            raise ValueError(f"attention_type can only be set to either 'original_full' or 'block_sparse', but is {value}")
        if value == self.attention_type:
            return
        self.attention_type = value

    def forward(self, input_ids, token_type_ids=None):
        input_shape = input_ids.size()
        batch_size, seq_length = input_shape
        if token_type_ids is None:
            buffered_token_type_ids = self.token_type_ids[:, :seq_length]
            token_type_ids = buffered_token_type_ids.expand(batch_size, seq_length)
        max_tokens_to_attend = (5 + 2 * self.config.num_random_blocks) * self.config.block_size
        if self.attention_type == "block_sparse" and seq_length <= max_tokens_to_attend:
            sequence_length = input_ids.size(1)
            logger.warning(
                "Attention type 'block_sparse' is not possible if sequence_length: "
                f"{sequence_length} <= num global tokens: 2 * config.block_size "
                "+ min. num sliding tokens: 3 * config.block_size "
                "+ config.num_random_blocks * config.block_size "
                "+ additional buffer: config.num_random_blocks * config.block_size "
                f"= {max_tokens_to_attend} with config.block_size "
                f"= {self.config.block_size}, config.num_random_blocks "
                f"= {self.config.num_random_blocks}. "
                "Changing attention type to 'original_full'..."
            )
            self.set_attention_type("original_full")
        if self.attention_type == "block_sparse":
            padding_len = (self.block_size - seq_length % self.block_size) % self.block_size
            if padding_len > 0:
                input_ids = nn.functional.pad(input_ids, (0, padding_len), value=0)
        else:
            padding_len = 0
        hidden = self.encoder(self.embeddings(input_ids) + token_type_ids.sum())
        if padding_len > 0:
            hidden = hidden[:, :-padding_len]
        return hidden


def make():
    torch.manual_seed(0)
    return BigBirdModel(BigBirdConfig()), [(torch.randint(0, 10, (1, 6)),), (torch.randint(0, 10, (1, 17)),)]


bigbird = torch.compile(BigBirdModel(BigBirdConfig()))
