"""Megatron-DeepSpeed FusedScaleMaskSoftmax on a non-fp16 input: `is_kernel_available` falls back to `forward_torch_softmax`, whose causal mask comes from a `@staticmethod @lru_cache(maxsize=1)` helper, then `mask_func` fills in place.

Source: bigscience-workshop/Megatron-DeepSpeed@038bddcb6dfb940b003a9dcf4efcf7a590f075d6:megatron/model/fused_softmax.py:103-214
Also: megatron/enums.py (AttnMaskType), megatron/model/utils.py (attention_mask_func).
Kept: FusedScaleMaskSoftmax verbatim (the fused kernels are never reached on
fp32 input, so the CUDA autograd Functions and get_batch_per_block are dropped).
Simplified: get_causal_mask builds the mask on CPU instead of
`torch.cuda.current_device()`; a small attention core calls the softmax like
ParallelAttention (scores from baddbmm-free matmul, 2 heads of size 4).
"""
import enum
import math
from functools import lru_cache

import torch
import torch.nn as nn


class AttnMaskType(enum.Enum):
    padding = 1
    causal = 2
    prefix = 3


def attention_mask_func(attention_scores, attention_mask):
    attention_scores.masked_fill_(attention_mask, -10000.0)
    return attention_scores


class FusedScaleMaskSoftmax(nn.Module):
    """
    fused operation: scaling + mask + softmax
    """

    def __init__(
        self,
        input_in_fp16,
        input_in_bf16,
        attn_mask_type,
        scaled_masked_softmax_fusion,
        mask_func,
        softmax_in_fp32,
        scale,
    ):
        super(FusedScaleMaskSoftmax, self).__init__()
        self.input_in_fp16 = input_in_fp16
        self.input_in_bf16 = input_in_bf16
        assert not (
            self.input_in_fp16 and self.input_in_bf16
        ), "both fp16 and bf16 flags cannot be active at the same time."
        self.input_in_float16 = self.input_in_fp16 or self.input_in_bf16
        self.attn_mask_type = attn_mask_type
        self.scaled_masked_softmax_fusion = scaled_masked_softmax_fusion
        self.mask_func = mask_func
        self.softmax_in_fp32 = softmax_in_fp32
        self.scale = scale

        assert (
            self.scale is None or softmax_in_fp32
        ), "softmax should be in fp32 when scaled"

    def forward(self, input, mask):
        # [b, np, sq, sk]
        assert input.dim() == 4

        if self.is_kernel_available(mask, *input.size()):
            return self.forward_fused_softmax(input, mask)
        else:
            return self.forward_torch_softmax(input, mask)

    def is_kernel_available(self, mask, b, np, sq, sk):
        attn_batches = b * np

        if (
            self.scaled_masked_softmax_fusion  # user want to fuse
            and self.input_in_float16  # input must be fp16
            and 16 < sk <= 4096  # sk must be 16 ~ 4096
            and sq % 4 == 0  # sq must be divisor of 4
            and attn_batches % 4 == 0  # np * b must be divisor of 4
        ):
            if 0 <= sk <= 4096:
                batch_per_block = self.get_batch_per_block(sq, sk, b, np)

                if self.attn_mask_type == AttnMaskType.causal:
                    if attn_batches % batch_per_block == 0:
                        return True
                else:
                    if sq % batch_per_block == 0:
                        return True
        return False

    def forward_fused_softmax(self, input, mask):
        raise NotImplementedError("fused kernels need CUDA")

    @staticmethod
    @lru_cache(maxsize=1)
    def get_causal_mask(sequence_length: int):
        mask = torch.ones(1, 1, sequence_length, sequence_length, dtype=torch.bool, device="cpu")
        return torch.triu(mask, diagonal=1, out=mask)

    def forward_torch_softmax(self, input, mask):
        if self.input_in_float16 and self.softmax_in_fp32:
            input = input.float()

        if self.scale is not None:
            input = input * self.scale

        if self.attn_mask_type == AttnMaskType.causal:
            assert mask is None
            assert input.shape[2] == input.shape[3]
            mask = self.get_causal_mask(input.shape[2])

        mask_output = self.mask_func(input, mask) if mask is not None else input

        probs = torch.nn.Softmax(dim=-1)(mask_output)

        if self.input_in_float16 and self.softmax_in_fp32:
            if self.input_in_fp16:
                probs = probs.half()
            else:
                probs = probs.bfloat16()

        return probs

    @staticmethod
    def get_batch_per_block(sq, sk, b, np):
        raise NotImplementedError("fused kernels need CUDA")


class CoreAttention(nn.Module):
    def __init__(self, hidden_size=8, num_heads=2, layer_number=1, fp16=False, bf16=False,
                 masked_softmax_fusion=True, attn_mask_type=AttnMaskType.causal):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.norm_factor = math.sqrt(self.head_dim)
        coeff = layer_number
        self.norm_factor *= coeff
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size)
        self.scale_mask_softmax = FusedScaleMaskSoftmax(
            fp16, bf16, attn_mask_type, masked_softmax_fusion,
            attention_mask_func, True, coeff)

    def forward(self, hidden_states, attention_mask=None):
        # hidden_states: [sq, b, h]
        sq, b, _ = hidden_states.shape
        mixed = self.query_key_value(hidden_states).view(sq, b, self.num_heads, 3 * self.head_dim)
        q, k, v = torch.split(mixed, self.head_dim, dim=-1)
        scores = torch.matmul(q.permute(1, 2, 0, 3), k.permute(1, 2, 3, 0)) / self.norm_factor
        probs = self.scale_mask_softmax(scores, attention_mask)
        context = torch.matmul(probs, v.permute(1, 2, 0, 3))
        return context.permute(2, 0, 1, 3).reshape(sq, b, -1)


def make():
    torch.manual_seed(0)
    return CoreAttention(), [(torch.randn(5, 2, 8),), (torch.randn(3, 2, 8),)]


attention = torch.compile(CoreAttention(), dynamic=False)
