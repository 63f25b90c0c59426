"""GM508 bad: YOSO's expected-collision attention gives one mask as both the query and the key mask.

Source: huggingface/transformers@v5.23.0:src/transformers/models/yoso/modeling_yoso.py:104-132,393-398
(shortened: one head, no LSH path, no padding)
"""
import math

import torch
from torch import nn


class YosoCumulation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, query_mask, key_mask, query, key, value, config):
        hash_code_len = config["hash_code_len"]
        expectation = (1 - torch.acos(torch.matmul(query, key.transpose(-1, -2))) / math.pi) ** hash_code_len
        expectation = expectation * query_mask[:, :, None] * key_mask[:, None, :]
        cumulation_value = torch.matmul(expectation, value)
        ctx.save_for_backward(query_mask, key_mask, expectation, query, key, value)
        ctx.config = config
        return cumulation_value

    @staticmethod
    def backward(ctx, grad):
        query_mask, key_mask, expectation, query, key, value = ctx.saved_tensors
        hash_code_len = ctx.config["hash_code_len"]
        weighted_exp = torch.matmul(grad, value.transpose(-1, -2)) * expectation
        grad_query = torch.matmul(weighted_exp, (hash_code_len / 2) * key)
        grad_key = torch.matmul(weighted_exp.transpose(-1, -2), (hash_code_len / 2) * query)
        grad_value = torch.matmul(expectation.transpose(-1, -2), grad)
        return None, None, grad_query, grad_key, grad_value, None


class YosoAttention(nn.Module):
    def __init__(self, hidden_size: int = 8) -> None:
        super().__init__()
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.lsh_config = {"hash_code_len": 9}

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        query_layer = nn.functional.normalize(self.query(hidden_states), p=2, dim=-1)
        key_layer = nn.functional.normalize(self.key(hidden_states), p=2, dim=-1)
        value_layer = self.value(hidden_states)
        attention_mask = 1.0 + attention_mask / 10000.0
        context_layer = YosoCumulation.apply(
            attention_mask, attention_mask, query_layer, key_layer, value_layer, self.lsh_config
        )
        return context_layer


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return YosoAttention().train(), [(torch.randn(2, 5, 8), torch.ones(2, 5))]


compiled = torch.compile(YosoAttention().train())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
