"""GPT-NeoX ParallelSelfAttention.attention with ALiBi: baddbmm scores (beta=0 on a preallocated empty) go through AliBi.forward, which grows a matrix cached on Python attributes (`cached_seq_len`, `cached_matrix`) 4x when keys outgrow it, clips it, and picks the last key row when sq == 1.

Source: EleutherAI/gpt-neox@ea7aefd8f8e183256992d9fede4d7c71a46d67a5:megatron/model/positional_embeddings.py:129-167,214-258
Also: megatron/model/transformer.py:473-531 (attention's score computation,
cache-mask slice and the alibi call).
Kept: AliBi (_get_slopes with the non-power-of-2 recursion, forward) verbatim;
attention's output_size plumbing, the empty + baddbmm, the use_cache mask
slice and the alibi call.
Simplified: `device=torch.cuda.current_device()` is `query_layer.device`;
scale_mask_softmax is a masked_fill + softmax; no rpe, no mpu dropout RNG
tracker, no value/context half; 3 heads (not a power of 2), head size 4.
"""
import math

import torch


class AliBi(torch.nn.Module):
    def __init__(self, num_heads, mp_size=1, mp_rank=1):
        super().__init__()
        # megatron splits across heads, so we need to make sure each
        # head receives the correct matrix
        assert mp_size <= num_heads and mp_rank <= mp_size
        self.mp_size = mp_size
        self.mp_rank = mp_rank
        self.num_heads = num_heads
        self.slice_size = num_heads // mp_size
        self.cached_matrix = None
        self.cached_seq_len = None
        slopes = torch.Tensor(self._get_slopes(num_heads))[
            mp_rank * self.slice_size : (mp_rank + 1) * self.slice_size
        ]
        self.register_buffer("slopes", slopes)

    def _get_slopes(self, n):
        """
        Get slopes for Alibi positional embedding
        n : int = number of heads.
        For best performance, restrict n to a power of 2.
        """

        def get_slopes_power_of_2(n):
            start = 2 ** (-(2 ** -(math.log2(n) - 3)))
            ratio = start
            return [start * ratio**i for i in range(n)]

        if math.log2(n).is_integer():
            return get_slopes_power_of_2(n)
        else:
            closest_power_of_2 = 2 ** math.floor(math.log2(n))
            return (
                get_slopes_power_of_2(closest_power_of_2)
                + self._get_slopes(2 * closest_power_of_2)[0::2][
                    : n - closest_power_of_2
                ]
            )

    def forward(self, x):
        # [b, np, sq, sk]
        seq_len_q = x.shape[-2]
        seq_len_k = x.shape[-1]

        # Initialize the AliBi matrix to match the first provided key length; grow it exponentially
        # afterwards if longer inputs are provided. This is important for inference, where we will
        # encounter progressively longer samples; it should have no effect at training time.
        if self.cached_seq_len is not None and self.cached_seq_len >= seq_len_k:
            a = self.cached_matrix
        else:
            target_seq_len = (
                seq_len_k if self.cached_seq_len is None else self.cached_seq_len * 4
            )
            a = -torch.tril(
                torch.arange(target_seq_len)
                .view(target_seq_len, 1)
                .repeat(1, target_seq_len)
                + torch.arange(0, -target_seq_len, -1)
            )
            a = a.to(x.device).to(x.dtype)
            slopes = self.slopes.to(a.device).to(a.dtype)
            a = a * slopes.view(self.slopes.shape[0], 1, 1)
            self.cached_seq_len = target_seq_len
            self.cached_matrix = a

        # If the AliBi matrix is larger than the key length, clip it.
        if self.cached_seq_len > seq_len_k:
            a = self.cached_matrix[:, :seq_len_k, :seq_len_k]

        if seq_len_q != seq_len_k:
            # In the train case x has dimensionality [b, np, sq, sk] with sq == sk
            # The number of query tokens is equal to the number of key tokens
            # At inference time with cache in layer_past sq is not equal to sk. sq only contains one token (the last one in the full sequence)
            # In this case we use the appropriate token index of the cache matrix.
            # As the cache matrix could already be bigger from a past inference, not the last token index in the sq sequence is used
            assert (
                seq_len_q == 1
            ), "assumption sq == sk unless at inference time with cache in layer_past with sq == 1"
            a = a[:, seq_len_k - 1, :].view(
                a.shape[0], 1, a.shape[2]
            )  # seq_len_k - 1 points to the last token index in the current inference batch.

        return x + a


class AttentionScores(torch.nn.Module):
    def __init__(self, num_heads=3, hidden_size_per_attention_head=4, use_cache=True):
        super().__init__()
        self.pos_emb = "alibi"
        self.use_cache = use_cache
        self.norm_factor = math.sqrt(hidden_size_per_attention_head)
        if self.pos_emb == "alibi":
            self.alibi_embed = AliBi(num_heads, 1, 0)

    def scale_mask_softmax(self, attention_scores, attention_mask):
        return torch.softmax(attention_scores.masked_fill(attention_mask, -10000.0), dim=-1)

    def attention(
        self, query_layer, key_layer, value_layer, layer_past, attention_mask
    ):
        # [b, np, sq, sk]
        output_size = (
            query_layer.size(1),
            query_layer.size(2),
            query_layer.size(0),
            key_layer.size(0),
        )
        # [sq, b, np, hn] -> [sq, b * np, hn]
        query_layer = query_layer.view(
            output_size[2], output_size[0] * output_size[1], -1
        )
        key_layer = key_layer.view(output_size[3], output_size[0] * output_size[1], -1)
        # preallocating result tensor: [b * np, sq, sk]
        matmul_result = torch.empty(
            output_size[0] * output_size[1],
            output_size[2],
            output_size[3],
            dtype=query_layer.dtype,
            device=query_layer.device,
        )

        # Raw attention scores. [b * np, sq, sk]
        matmul_result = torch.baddbmm(
            matmul_result,
            query_layer.transpose(0, 1),  # [b * np, sq, hn]
            key_layer.transpose(0, 1).transpose(1, 2),  # [b * np, hn, sk]
            beta=0.0,
            alpha=(1.0 / self.norm_factor),
        )

        # change view to [b, np, sq, sk]
        attention_scores = matmul_result.view(*output_size)

        if self.use_cache:
            with torch.no_grad():
                attention_mask = attention_mask[
                    ..., : attention_scores.size(3), : attention_scores.size(3)
                ]

        if self.pos_emb == "alibi":
            attention_scores = self.alibi_embed(attention_scores)

        # attention scores and attention mask [b, np, sq, sk]
        attention_probs = self.scale_mask_softmax(attention_scores, attention_mask)
        return attention_probs

    def forward(self, query_layer, key_layer, attention_mask):
        return self.attention(query_layer, key_layer, None, None, attention_mask)


attn = torch.compile(AttentionScores())


def make():
    torch.manual_seed(0)
    m = AttentionScores()
    mask = torch.triu(torch.ones(1, 1, 8, 8, dtype=torch.bool), diagonal=1)
    q4, k4 = torch.randn(4, 1, 3, 4), torch.randn(4, 1, 3, 4)
    q6, k6 = torch.randn(6, 1, 3, 4), torch.randn(6, 1, 3, 4)
    q1, k5 = torch.randn(1, 1, 3, 4), torch.randn(5, 1, 3, 4)
    return m, [(q4, k4, mask), (q6, k6, mask), (q1, k5, mask[..., 4:5, :])]
