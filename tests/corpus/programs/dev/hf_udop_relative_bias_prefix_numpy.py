"""UDOP relative position biases: prefix buckets written per row from `num_prefix.cpu().numpy()`, and an `expand` that swaps the embedding in forward.

Source: huggingface/transformers@v5.23.0:src/transformers/models/udop/modeling_udop.py:847-1058,1087-1093,1216
Kept: RelativePositionBiasBase (get_bucket / get_relative_position / forward
with the `expand` re-creation of `relative_attention_bias` and the prefix
bucket loop over `num_prefix.cpu().numpy()`), the 1D and horizontal
subclasses with their ValueError guards, RelativePositionBiasAggregated,
BIAS_CLASSES / create_relative_bias building the list from
`config.relative_bias_args`, and the encoder stack calling
`self.relative_bias(attention_mask=..., bbox=...)`.
Simplified: the T5 log-bucketing (`_relative_position_bucket`, present
elsewhere in the corpus) is reduced to a centred clamp; one
attention layer of 2 heads over 8-dim states.
"""
import random
from abc import ABC, abstractmethod
from copy import deepcopy

import torch
from torch import Tensor, nn

AUGMENTATION_RANGE = (0.80, 1.25)


def get_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    # UDOP reuses T5's log bucketing here (kept elsewhere in the corpus); a centred clamp keeps the range.
    offset = num_buckets // 2 if bidirectional else 0
    return (relative_position + offset).clamp(0, num_buckets - 1)


class RelativePositionBiasBase(nn.Module, ABC):
    def __init__(
        self,
        num_heads=None,
        relative_attention_num_buckets=32,
        bidirectional=True,
        scaling_factor=1,
        max_distance=128,
        level="tokens",
        augmentation=False,
        prefix_bucket=False,
        expand=False,
    ):
        super().__init__()
        self.prefix_bucket = prefix_bucket
        self.augmentation = augmentation
        self.level = level
        self.max_distance = max_distance
        self.scaling_factor = scaling_factor
        self.bidirectional = bidirectional
        self.num_heads = num_heads
        self.expand = expand
        self.relative_attention_num_buckets = relative_attention_num_buckets
        extra_head = 2 if prefix_bucket and not self.expand else 0
        self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets + extra_head, self.num_heads)

    @abstractmethod
    def prepare_input(self, attention_mask=None, bbox=None) -> Tensor:
        pass

    def get_bucket(self, attention_mask=None, bbox=None) -> Tensor:
        relative_position = self.prepare_input(attention_mask, bbox)
        rp_bucket: Tensor = get_relative_position_bucket(
            relative_position,
            bidirectional=self.bidirectional,
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.max_distance,
        )
        return rp_bucket

    def get_relative_position(self, positions):
        context_position = positions[:, :, None]
        memory_position = positions[:, None, :]
        relative_position = (memory_position - context_position).float()
        if self.augmentation and self.training:
            relative_position *= random.uniform(*AUGMENTATION_RANGE)
        relative_position *= self.scaling_factor

        return relative_position.to(torch.long)

    def forward(self, attention_mask=None, bbox=None) -> Tensor:
        # re-using pretrained model with subsequent addition of prefix_bucket
        if self.expand and self.prefix_bucket:
            new_bias = nn.Embedding(self.relative_attention_num_buckets + 2, self.num_heads)
            new_bias.weight.data[: self.relative_attention_num_buckets] = self.relative_attention_bias.weight.data
            new_bias.weight.data[self.relative_attention_num_buckets :] = 0.1
            self.relative_attention_bias = new_bias
            self.expand = False

        rp_bucket = self.get_bucket(attention_mask, bbox)

        if self.prefix_bucket:
            if rp_bucket.size(0) == 1 and attention_mask.size(0) > 1:
                rp_bucket = rp_bucket.repeat(attention_mask.size(0), 1, 1)
            # based on assumption that prefix bboxes are negative
            is_prefix = bbox[:, :, 1] < 0
            num_prefix = is_prefix.sum(-1)
            for idx, num_prefix_row in enumerate(num_prefix.cpu().numpy()):
                rp_bucket[idx, :num_prefix_row, num_prefix_row:] = self.relative_attention_num_buckets
                rp_bucket[idx, num_prefix_row:, :num_prefix_row] = self.relative_attention_num_buckets + 1

        rp_bucket = rp_bucket.clamp(0, self.relative_attention_bias.num_embeddings - 1)
        values: Tensor = self.relative_attention_bias(rp_bucket)
        if values.dim() != 4:
            raise ValueError("Wrong dimension of values tensor")
        values = values.permute([0, 3, 1, 2])

        return values


class RelativePositionBias1D(RelativePositionBiasBase):
    def __init__(self, scaling_factor=1, max_distance=128, **kwargs):
        super().__init__(scaling_factor=scaling_factor, max_distance=max_distance, **kwargs)

    def prepare_input(self, attention_mask=None, bbox=None) -> Tensor:
        if self.scaling_factor != 1:
            raise ValueError("No need to scale 1d features")
        relative_position = self.get_relative_position(
            torch.arange(attention_mask.size(1), dtype=torch.long, device=attention_mask.device)[None, :]
        )

        return relative_position


class RelativePositionBiasHorizontal(RelativePositionBiasBase):
    def __init__(self, scaling_factor=100, max_distance=100, **kwargs):
        super().__init__(scaling_factor=scaling_factor, max_distance=max_distance, **kwargs)

    def prepare_input(self, attention_mask=None, bbox=None) -> Tensor:
        if not self.scaling_factor > 1.0:
            raise ValueError("Need to scale the values of bboxes, as there are in small (0,1) range")
        if bbox is None:
            raise ValueError("Bbox is required for horizontal relative position bias")
        # get x positions of left point of bbox
        horizontal_position: Tensor = bbox[:, :, [0, 2]].mean(dim=-1)

        return self.get_relative_position(horizontal_position)


class RelativePositionBiasAggregated(nn.Module):
    def __init__(self, modules):
        super().__init__()
        self.biases = nn.ModuleList(modules)

    def forward(self, attention_mask=None, bbox=None):
        output = 0.0
        for bias in self.biases:  # type: ignore
            output = bias(attention_mask, bbox) + output

        return output


BIAS_CLASSES = {
    "1d": RelativePositionBias1D,
    "horizontal": RelativePositionBiasHorizontal,
}


def create_relative_bias(config):
    bias_list = []
    if hasattr(config, "relative_bias_args"):
        for bias_kwargs_org in config.relative_bias_args:
            bias_kwargs = deepcopy(bias_kwargs_org)
            bias_type = bias_kwargs.pop("type")
            model_num_heads = config.num_heads if hasattr(config, "num_heads") else config.num_attention_heads
            if "num_heads" in bias_kwargs:
                if bias_kwargs["num_heads"] != model_num_heads:
                    raise ValueError("Number of heads must match num of heads in the model")
            else:
                bias_kwargs["num_heads"] = model_num_heads
            bias_list.append(BIAS_CLASSES[bias_type](**bias_kwargs))  # type: ignore

    return bias_list


class UdopConfig:
    vocab_size = 20
    d_model = 8
    num_heads = 2

    def __init__(self, expand=False):
        self.relative_bias_args = [
            {"type": "1d", "relative_attention_num_buckets": 8, "prefix_bucket": True, "expand": expand},
            {"type": "horizontal", "relative_attention_num_buckets": 8, "augmentation": True},
        ]


class UdopStack(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.o = nn.Linear(config.d_model, config.d_model)
        self.relative_bias = self._get_relative_bias(config)

    @staticmethod
    def _get_relative_bias(config):
        relative_bias_list = create_relative_bias(config)
        return RelativePositionBiasAggregated(relative_bias_list)

    def forward(self, input_ids, attention_mask, bbox):
        hidden_states = self.embed_tokens(input_ids)
        bsz, seq_len, _ = hidden_states.shape
        position_bias = self.relative_bias(attention_mask=attention_mask, bbox=bbox)
        q, k, v = self.qkv(hidden_states).view(bsz, seq_len, 3, self.config.num_heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) + position_bias
        scores = scores + (1.0 - attention_mask[:, None, None, :]) * torch.finfo(scores.dtype).min
        attn = scores.softmax(-1) @ v
        return self.o(attn.transpose(1, 2).reshape(bsz, seq_len, -1))


encoder = torch.compile(UdopStack(UdopConfig(expand=True)).eval())


def make():
    torch.manual_seed(0)
    ids = torch.randint(0, 20, (2, 6))
    mask = torch.ones(2, 6)
    bbox = torch.rand(2, 6, 4)
    bbox[0, :2, 1] = -1.0  # two prefix tokens in the first document, one in the second
    bbox[1, :1, 1] = -1.0
    model = UdopStack(UdopConfig(expand=True)).eval()
    return model, [(ids, mask, bbox), (ids[:1], mask[:1], bbox[:1])]
