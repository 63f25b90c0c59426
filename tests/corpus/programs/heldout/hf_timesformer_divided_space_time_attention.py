"""TimeSformer model: patch/pos/time embeddings with resize branches, divided space-time attention layers.

Source: huggingface/transformers@875545d799da39e0326431787537f4d84cb18bf6:src/transformers/models/timesformer/modeling_timesformer.py:50-160,240-480,560-620
(the divided-space-time layer body keeps the short variable names of the earlier revision 007c13cade99; same code)
Kept: TimeSformerPatchEmbed (B,T,C,H,W -> frames folded into batch), TimeSformerEmbeddings with the
`embeddings.size(1) != self.position_embeddings.size(1)` nearest-interpolate branch (int(... ** 0.5)) and the
time-embedding branch, drop_path, the qkv self-attention, TimeSformerLayer.__init__'s dpr list built with
`.item()` and its forward for "divided_space_time" (temporal attention, cls-token repeat, spatial attention,
cls averaging, reshapes/permutes), TimeSformerEncoder loop, TimeSformerModel.forward tuple path.
Simplified: 2 layers, hidden 8, 2 frames of 8x8 with 4x4 patches; return_dict=False; no head pruning.
"""
import collections.abc as container_abcs
from itertools import repeat
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn


class TimeSformerConfig:
    image_size = 8
    patch_size = 4
    num_channels = 3
    num_frames = 2
    hidden_size = 8
    num_hidden_layers = 2
    num_attention_heads = 2
    intermediate_size = 16
    hidden_act = "gelu"
    hidden_dropout_prob = 0.0
    attention_probs_dropout_prob = 0.0
    layer_norm_eps = 1e-6
    qkv_bias = True
    attention_type = "divided_space_time"
    drop_path_rate = 0.1
    use_mean_pooling = False
    output_attentions = False
    output_hidden_states = False
    use_return_dict = False


ACT2FN = {"gelu": nn.GELU()}


def _ntuple(n):
    def parse(x):
        if isinstance(x, container_abcs.Iterable):
            return x
        return tuple(repeat(x, n))

    return parse


to_2tuple = _ntuple(2)


class TimeSformerPatchEmbed(nn.Module):
    """Image to Patch Embedding"""

    def __init__(self, config):
        super().__init__()

        img_size = config.image_size
        patch_size = config.patch_size
        in_chans = config.num_channels
        embed_dim = config.hidden_size

        img_size = to_2tuple(img_size)
        patch_size = to_2tuple(patch_size)
        num_patches = (img_size[1] // patch_size[1]) * (img_size[0] // patch_size[0])
        self.img_size = img_size
        self.patch_size = patch_size
        self.num_patches = num_patches

        self.projection = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, pixel_values):
        batch_size, num_frames, num_channels, height, width = pixel_values.shape
        pixel_values = pixel_values.reshape(batch_size * num_frames, num_channels, height, width)

        embeddings = self.projection(pixel_values)
        patch_width = embeddings.size(-1)
        embeddings = embeddings.flatten(2).transpose(1, 2)
        return embeddings, num_frames, patch_width


class TimeSformerEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()

        embed_dim = config.hidden_size
        num_frames = config.num_frames
        drop_rate = config.hidden_dropout_prob
        attention_type = config.attention_type

        self.attention_type = attention_type
        self.patch_embeddings = TimeSformerPatchEmbed(config)
        self.num_patches = self.patch_embeddings.num_patches

        # Positional Embeddings
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.position_embeddings = nn.Parameter(torch.zeros(1, self.num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=drop_rate)
        if attention_type != "space_only":
            self.time_embeddings = nn.Parameter(torch.zeros(1, num_frames, embed_dim))
            self.time_drop = nn.Dropout(p=drop_rate)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]

        # create patch embeddings
        embeddings, num_frames, patch_width = self.patch_embeddings(pixel_values)

        cls_tokens = self.cls_token.expand(embeddings.size(0), -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)

        # resizing the positional embeddings in case they don't match the input at inference
        if embeddings.size(1) != self.position_embeddings.size(1):
            position_embeddings = self.position_embeddings
            cls_pos_embed = position_embeddings[0, 0, :].unsqueeze(0).unsqueeze(1)
            other_pos_embed = position_embeddings[0, 1:, :].unsqueeze(0).transpose(1, 2)
            patch_num = int(other_pos_embed.size(2) ** 0.5)
            patch_height = embeddings.size(1) // patch_width
            other_pos_embed = other_pos_embed.reshape(1, embeddings.size(2), patch_num, patch_num)
            new_pos_embed = nn.functional.interpolate(
                other_pos_embed, size=(patch_height, patch_width), mode="nearest"
            )
            new_pos_embed = new_pos_embed.flatten(2)
            new_pos_embed = new_pos_embed.transpose(1, 2)
            new_pos_embed = torch.cat((cls_pos_embed, new_pos_embed), 1)
            embeddings = embeddings + new_pos_embed
        else:
            embeddings = embeddings + self.position_embeddings
        embeddings = self.pos_drop(embeddings)

        # Time Embeddings
        if self.attention_type != "space_only":
            cls_tokens = embeddings[:batch_size, 0, :].unsqueeze(1)
            embeddings = embeddings[:, 1:]
            _, patch_height, patch_width = embeddings.shape
            embeddings = (
                embeddings.reshape(batch_size, num_frames, patch_height, patch_width)
                .permute(0, 2, 1, 3)
                .reshape(batch_size * patch_height, num_frames, patch_width)
            )
            # Resizing time embeddings in case they don't match
            if num_frames != self.time_embeddings.size(1):
                time_embeddings = self.time_embeddings.transpose(1, 2)
                new_time_embeddings = F.interpolate(time_embeddings, size=(num_frames), mode="nearest")
                new_time_embeddings = new_time_embeddings.transpose(1, 2)
                embeddings = embeddings + new_time_embeddings
            else:
                embeddings = embeddings + self.time_embeddings
            embeddings = self.time_drop(embeddings)
            # embeddings = rearrange(embeddings, "(b n) t m -> b (n t) m", b=batch_size, t=num_frames)
            embeddings = embeddings.view(batch_size, patch_height, num_frames, patch_width).reshape(
                batch_size, patch_height * num_frames, patch_width
            )
            embeddings = torch.cat((cls_tokens, embeddings), dim=1)

        return embeddings


def drop_path(input: torch.Tensor, drop_prob: float = 0.0, training: bool = False) -> torch.Tensor:
    if drop_prob == 0.0 or not training:
        return input
    keep_prob = 1 - drop_prob
    shape = (input.shape[0],) + (1,) * (input.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
    random_tensor = keep_prob + torch.rand(shape, dtype=input.dtype, device=input.device)
    random_tensor.floor_()  # binarize
    output = input.div(keep_prob) * random_tensor
    return output


class TimeSformerDropPath(nn.Module):
    def __init__(self, drop_prob: Optional[float] = None) -> None:
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return drop_path(hidden_states, self.drop_prob, self.training)


class TimeSformerSelfAttention(nn.Module):
    def __init__(self, config: TimeSformerConfig):
        super().__init__()

        dim = config.hidden_size
        num_heads = config.num_attention_heads
        qkv_bias = config.qkv_bias
        attn_drop = config.attention_probs_dropout_prob

        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)

    def forward(self, hidden_states, output_attentions: bool = False):
        B, N, C = hidden_states.shape
        qkv = self.qkv(hidden_states).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]

        attention_probs = (q @ k.transpose(-2, -1)) * self.scale
        attention_probs = attention_probs.softmax(dim=-1)
        attention_probs = self.attn_drop(attention_probs)

        context_layer = (attention_probs @ v).transpose(1, 2).reshape(B, N, C)

        outputs = (context_layer, attention_probs) if output_attentions else (context_layer,)

        return outputs


class TimeSformerSelfOutput(nn.Module):
    def __init__(self, config: TimeSformerConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class TimeSformerAttention(nn.Module):
    def __init__(self, config: TimeSformerConfig) -> None:
        super().__init__()
        self.attention = TimeSformerSelfAttention(config)
        self.output = TimeSformerSelfOutput(config)
        self.pruned_heads = set()

    def forward(
        self,
        hidden_states: torch.Tensor,
        output_attentions: bool = False,
    ) -> Union[Tuple[torch.Tensor, torch.Tensor], Tuple[torch.Tensor]]:
        self_outputs = self.attention(hidden_states, output_attentions)

        attention_output = self.output(self_outputs[0])

        outputs = (attention_output,) + self_outputs[1:]  # add attentions if we output them
        return outputs


class TimeSformerIntermediate(nn.Module):
    def __init__(self, config: TimeSformerConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

        if isinstance(config.hidden_act, str):
            self.intermediate_act_fn = ACT2FN[config.hidden_act]
        else:
            self.intermediate_act_fn = config.hidden_act

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class TimeSformerOutput(nn.Module):
    def __init__(self, config: TimeSformerConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class TimeSformerLayer(nn.Module):
    def __init__(self, config: TimeSformerConfig, layer_index: int) -> None:
        super().__init__()

        dim = config.hidden_size
        attention_type = config.attention_type

        drop_path_rates = [
            x.item() for x in torch.linspace(0, config.drop_path_rate, config.num_hidden_layers)
        ]  # stochastic depth decay rule
        drop_path_rate = drop_path_rates[layer_index]

        self.drop_path = TimeSformerDropPath(config.drop_path_rate) if drop_path_rate > 0.0 else nn.Identity()
        self.attention = TimeSformerAttention(config)
        self.intermediate = TimeSformerIntermediate(config)
        self.output = TimeSformerOutput(config)
        self.layernorm_before = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.layernorm_after = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

        self.config = config
        self.attention_type = attention_type
        if attention_type not in ["divided_space_time", "space_only", "joint_space_time"]:
            raise ValueError("Unknown attention type: {}".format(attention_type))

        # Temporal Attention Parameters
        if self.attention_type == "divided_space_time":
            self.temporal_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.temporal_attention = TimeSformerAttention(config)
            self.temporal_dense = nn.Linear(dim, dim)

    def forward(self, hidden_states: torch.Tensor, output_attentions: bool = False):
        T = self.config.num_frames
        W = self.config.image_size // self.config.patch_size
        B = hidden_states.shape[0]
        num_spatial_tokens = (hidden_states.size(1) - 1) // T
        H = num_spatial_tokens // W

        if self.attention_type in ["space_only", "joint_space_time"]:
            self_attention_outputs = self.attention(
                self.layernorm_before(hidden_states), output_attentions=output_attentions
            )
            attention_output = self_attention_outputs[0]
            outputs = self_attention_outputs[1:]  # add self attentions if we output attention weights

            hidden_states = hidden_states + self.drop_path(attention_output)

            layer_output = self.layernorm_after(hidden_states)
            layer_output = self.intermediate(layer_output)
            layer_output = self.output(layer_output)
            layer_output = hidden_states + self.drop_path(layer_output)

            outputs = (layer_output,) + outputs

            return outputs

        elif self.attention_type == "divided_space_time":
            # Temporal
            xt = hidden_states[:, 1:, :]
            xt = xt.reshape(B, H, W, T, xt.shape[2]).reshape(B * H * W, T, xt.shape[2])

            temporal_attention_outputs = self.temporal_attention(
                self.temporal_layernorm(xt), output_attentions=output_attentions
            )
            attention_output = temporal_attention_outputs[0]
            outputs = temporal_attention_outputs[1:]  # add self attentions if we output attention weights

            res_temporal = self.drop_path(attention_output)

            res_temporal = res_temporal.reshape(B, H, W, T, res_temporal.shape[2]).reshape(
                B, H * W * T, res_temporal.shape[2]
            )
            res_temporal = self.temporal_dense(res_temporal)
            xt = hidden_states[:, 1:, :] + res_temporal

            # Spatial
            init_cls_token = hidden_states[:, 0, :].unsqueeze(1)
            cls_token = init_cls_token.repeat(1, T, 1)
            cls_token = cls_token.reshape(B * T, 1, cls_token.shape[2])
            xs = xt
            xs = xs.reshape(B, H, W, T, xs.shape[2]).permute(0, 3, 1, 2, 4).reshape(B * T, H * W, xs.shape[2])
            xs = torch.cat((cls_token, xs), 1)

            spatial_attention_outputs = self.attention(
                self.layernorm_before(xs),
            )
            attention_output = spatial_attention_outputs[0]

            res_spatial = self.drop_path(attention_output)

            # Taking care of CLS token
            cls_token = res_spatial[:, 0, :]
            # cls_token = rearrange(cls_token, "(b t) m -> b t m", b=B, t=T)
            cls_token = cls_token.reshape(B, T, cls_token.shape[1])
            cls_token = torch.mean(cls_token, 1, True)  # averaging for every frame
            res_spatial = res_spatial[:, 1:, :]
            # res_spatial = rearrange(res_spatial, "(b t) (h w) m -> b (h w t) m", b=B, h=H, w=W, t=T)
            res_spatial = (
                res_spatial.reshape(B, T, H, W, res_spatial.shape[2])
                .permute(0, 2, 3, 1, 4)
                .reshape(B, H * W * T, res_spatial.shape[2])
            )
            res = res_spatial
            hidden_states = xt

            # Mlp
            hidden_states = torch.cat((init_cls_token, hidden_states), 1) + torch.cat((cls_token, res), 1)
            layer_output = self.layernorm_after(hidden_states)
            layer_output = self.intermediate(layer_output)
            layer_output = self.output(layer_output)
            layer_output = hidden_states + self.drop_path(layer_output)

            outputs = (layer_output,) + outputs

            return outputs


class TimeSformerEncoder(nn.Module):
    def __init__(self, config: TimeSformerConfig) -> None:
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([TimeSformerLayer(config, ind) for ind in range(config.num_hidden_layers)])
        self.gradient_checkpointing = False

    def forward(
        self,
        hidden_states: torch.Tensor,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        return_dict: bool = True,
    ):
        all_hidden_states = () if output_hidden_states else None
        all_self_attentions = () if output_attentions else None

        for i, layer_module in enumerate(self.layer):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)

            layer_outputs = layer_module(hidden_states, output_attentions)

            hidden_states = layer_outputs[0]

            if output_attentions:
                all_self_attentions = all_self_attentions + (layer_outputs[1],)

        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)

        return tuple(v for v in [hidden_states, all_hidden_states, all_self_attentions] if v is not None)


class TimeSformerModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

        self.embeddings = TimeSformerEmbeddings(config)
        self.encoder = TimeSformerEncoder(config)

        if config.use_mean_pooling:
            self.layernorm = None
        else:
            self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(
        self,
        pixel_values,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
    ):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        embedding_output = self.embeddings(pixel_values)

        encoder_outputs = self.encoder(
            embedding_output,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=return_dict,
        )
        sequence_output = encoder_outputs[0]
        if self.layernorm is not None:
            sequence_output = self.layernorm(sequence_output)

        return (sequence_output,) + encoder_outputs[1:]


def get_model():
    torch.manual_seed(0)
    model = TimeSformerModel(TimeSformerConfig())
    return torch.compile(model.eval())


def make():
    torch.manual_seed(0)
    video = torch.randn(2, 2, 3, 8, 8)  # (batch, frames, channels, height, width)
    tall_video = torch.randn(1, 2, 3, 12, 8)
    return TimeSformerModel(TimeSformerConfig()).eval(), [
        (video,),
        (video, True, True),
        (tall_video,),
    ]
