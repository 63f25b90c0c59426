"""DINOv2 backbone: forced hidden states, loop over stage names selecting out_features, optional layernorm and reshape of patch tokens into feature maps.

Source: huggingface/transformers@v5.23.0:src/transformers/models/dinov2/modeling_dinov2.py:40-385,479-551
Also: huggingface/transformers@v5.23.0:src/transformers/backbone_utils.py:162-186 (filter_output_hidden_states)
Kept: Dinov2Backbone.forward verbatim (`for stage, hidden_state in zip(self.stage_names,
hidden_states)`, `if stage in self.out_features`, config.apply_layernorm and
config.reshape_hidden_states with pixel_values.shape / patch_size reshape), the
filter_output_hidden_states wrapper (force output_hidden_states=True, rebuild the output without
hidden_states), BackboneMixin's stage_names/out_features, embeddings with bicubic
interpolate_pos_encoding, layers with LayerScale/DropPath.
Simplified: the encoder collects hidden states itself (embedding output + each layer) instead of
output-capturing hooks; create_bidirectional_mask returns the mask unchanged; 8x8 training size,
patch 4, hidden 8, 2 layers.
"""
import functools
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn


def torch_int(x):
    return x.to(torch.int64) if torch.jit.is_tracing() and isinstance(x, torch.Tensor) else int(x)


def create_bidirectional_mask(config, inputs_embeds, attention_mask):
    return attention_mask


class AttentionInterface:
    _global_mapping = {}

    def get_interface(self, attn_implementation, default):
        if attn_implementation == "eager" or attn_implementation is None:
            return default
        return self._global_mapping[attn_implementation]


ALL_ATTENTION_FUNCTIONS = AttentionInterface()


class Dinov2Config:
    image_size = 8
    patch_size = 4
    num_channels = 3
    hidden_size = 8
    num_hidden_layers = 2
    num_attention_heads = 2
    mlp_ratio = 4
    hidden_act = "gelu"
    hidden_dropout_prob = 0.0
    attention_probs_dropout_prob = 0.0
    layer_norm_eps = 1e-6
    qkv_bias = True
    layerscale_value = 1.0
    drop_path_rate = 0.1
    use_swiglu_ffn = False
    use_mask_token = True
    out_features = ["stage1", "stage2"]
    apply_layernorm = True
    reshape_hidden_states = True
    output_hidden_states = False
    _attn_implementation = "eager"


@dataclass
class BaseModelOutput:
    last_hidden_state: torch.Tensor = None
    hidden_states: tuple = None
    attentions: tuple = None


@dataclass
class BackboneOutput:
    feature_maps: tuple = None
    hidden_states: tuple = None
    attentions: tuple = None

    def items(self):
        return self.__dict__.items()


class Dinov2PatchEmbeddings(nn.Module):
    def __init__(self, config: Dinov2Config):
        super().__init__()
        image_size, patch_size = config.image_size, config.patch_size
        image_size = image_size if isinstance(image_size, Iterable) else (image_size, image_size)
        patch_size = patch_size if isinstance(patch_size, Iterable) else (patch_size, patch_size)
        self.num_patches = (image_size[1] // patch_size[1]) * (image_size[0] // patch_size[0])
        self.image_size = image_size
        self.patch_size = patch_size
        self.num_channels = config.num_channels
        self.projection = nn.Conv2d(config.num_channels, config.hidden_size, kernel_size=patch_size, stride=patch_size)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        num_channels = pixel_values.shape[1]
        if num_channels != self.num_channels:
            raise ValueError(
                "Make sure that the channel dimension of the pixel values match with the one set in the configuration."
                f" Expected {self.num_channels} but got {num_channels}."
            )
        pixel_values = pixel_values.to(self.projection.weight.dtype)
        return self.projection(pixel_values).flatten(2).transpose(1, 2)


class Dinov2Embeddings(nn.Module):
    """Construct the CLS token, mask token, position and patch embeddings."""

    def __init__(self, config: Dinov2Config) -> None:
        super().__init__()

        self.cls_token = nn.Parameter(torch.randn(1, 1, config.hidden_size))
        self.mask_token = nn.Parameter(torch.zeros(1, config.hidden_size)) if config.use_mask_token else None
        self.patch_embeddings = Dinov2PatchEmbeddings(config)
        self.patch_size = config.patch_size
        self.position_embeddings = nn.Parameter(
            torch.randn(1, self.patch_embeddings.num_patches + 1, config.hidden_size)
        )
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.config = config

    def interpolate_pos_encoding(self, embeddings: torch.Tensor, height: int, width: int) -> torch.Tensor:
        num_patches = embeddings.shape[1] - 1
        num_positions = self.position_embeddings.shape[1] - 1

        # always interpolate when tracing to ensure the exported model works for dynamic input shapes
        if not torch.jit.is_tracing() and num_patches == num_positions and height == width:
            return self.position_embeddings

        class_pos_embed = self.position_embeddings[:, :1]
        patch_pos_embed = self.position_embeddings[:, 1:]

        dim = embeddings.shape[-1]

        patch_height, patch_width = self.patch_embeddings.patch_size
        new_height = height // patch_height
        new_width = width // patch_width

        sqrt_num_positions = torch_int(num_positions**0.5)
        patch_pos_embed = patch_pos_embed.reshape(1, sqrt_num_positions, sqrt_num_positions, dim)
        patch_pos_embed = patch_pos_embed.permute(0, 3, 1, 2)

        # interpolate in float32; bicubic resampling in half precision shifts the embeddings
        target_dtype = patch_pos_embed.dtype
        patch_pos_embed = nn.functional.interpolate(
            patch_pos_embed.to(torch.float32),
            size=(new_height, new_width),
            mode="bicubic",
            align_corners=False,
        ).to(dtype=target_dtype)

        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)

        return torch.cat((class_pos_embed, patch_pos_embed), dim=1)

    def forward(self, pixel_values, bool_masked_pos=None):
        _, _, height, width = pixel_values.shape
        embeddings = self.patch_embeddings(pixel_values)
        batch_size, seq_len, _ = embeddings.size()

        if bool_masked_pos is not None:
            mask_tokens = self.mask_token.expand(batch_size, seq_len, -1)
            # replace the masked visual tokens by mask_tokens
            mask = bool_masked_pos.unsqueeze(-1).type_as(mask_tokens)
            embeddings = embeddings * (1 - mask) + mask_tokens * mask

        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)

        if self.position_embeddings is not None:
            embeddings = embeddings + self.interpolate_pos_encoding(embeddings, height, width)

        embeddings = self.dropout(embeddings)

        return embeddings


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    if scaling is None:
        scaling = query.size(-1) ** -0.5

    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling

    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)

    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()

    return attn_output, attn_weights


class Dinov2Attention(nn.Module):
    def __init__(self, config: Dinov2Config):
        super().__init__()
        self.config = config
        self.num_attention_heads = config.num_attention_heads
        self.head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
        self.attention_dropout = config.attention_probs_dropout_prob
        self.scaling = self.head_dim**-0.5
        self.is_causal = False

        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.qkv_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.qkv_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.qkv_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=True)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)

        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )

        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
            **kwargs,
        )

        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class Dinov2LayerScale(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.lambda1 = nn.Parameter(config.layerscale_value * torch.ones(config.hidden_size))

    def forward(self, hidden_state: torch.Tensor) -> torch.Tensor:
        return hidden_state * self.lambda1


class Dinov2MLP(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        self.activation_fn = nn.GELU()
        self.fc1 = nn.Linear(config.hidden_size, int(config.hidden_size * config.mlp_ratio))
        self.fc2 = nn.Linear(int(config.hidden_size * config.mlp_ratio), config.hidden_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        hidden_states = self.fc2(hidden_states)
        return hidden_states


class Dinov2SwiGLUFFN(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        hidden_features = int(config.hidden_size * config.mlp_ratio)
        hidden_features = (int(hidden_features * 2 / 3) + 7) // 8 * 8

        self.gate_proj = nn.Linear(config.hidden_size, hidden_features, bias=True)
        self.up_proj = nn.Linear(config.hidden_size, hidden_features, bias=True)
        self.down_proj = nn.Linear(hidden_features, config.hidden_size, bias=True)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


class Dinov2DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0.0) -> None:
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.drop_prob == 0.0 or not self.training:
            return hidden_states
        keep_prob = 1 - self.drop_prob
        shape = (hidden_states.shape[0],) + (1,) * (hidden_states.ndim - 1)
        random_tensor = torch.rand(shape, dtype=hidden_states.dtype, device=hidden_states.device)
        random_tensor = torch.floor(random_tensor + keep_prob)
        return hidden_states.div(keep_prob) * random_tensor


class Dinov2Layer(nn.Module):
    """This corresponds to the Block class in the original implementation."""

    def __init__(self, config: Dinov2Config) -> None:
        super().__init__()

        self.norm1 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = Dinov2Attention(config)
        self.layer_scale1 = Dinov2LayerScale(config)
        self.drop_path = Dinov2DropPath(config.drop_path_rate) if config.drop_path_rate > 0.0 else nn.Identity()

        self.norm2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = Dinov2SwiGLUFFN(config) if config.use_swiglu_ffn else Dinov2MLP(config)
        self.layer_scale2 = Dinov2LayerScale(config)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        residual = hidden_states
        hidden_states = self.norm1(hidden_states)
        hidden_states, _ = self.attention(hidden_states, attention_mask=attention_mask, **kwargs)
        hidden_states = self.layer_scale1(hidden_states)
        hidden_states = self.drop_path(hidden_states) + residual

        residual = hidden_states
        hidden_states = self.norm2(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.layer_scale2(hidden_states)
        hidden_states = self.drop_path(hidden_states) + residual

        return hidden_states


class Dinov2Encoder(nn.Module):
    def __init__(self, config: Dinov2Config):
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([Dinov2Layer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, output_hidden_states=False, **kwargs):
        all_hidden_states = (hidden_states,) if output_hidden_states else None
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask, **kwargs)
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)

        return BaseModelOutput(last_hidden_state=hidden_states, hidden_states=all_hidden_states)


def filter_output_hidden_states(forward_function):
    @functools.wraps(forward_function)
    def wrapper(self, *args, **kwargs):
        output_hidden_states = kwargs.get("output_hidden_states", getattr(self.config, "output_hidden_states", False))
        kwargs["output_hidden_states"] = True
        output = forward_function(self, *args, **kwargs)
        if not output_hidden_states:
            filtered_output_data = {k: v for k, v in output.items() if k != "hidden_states"}
            output = type(output)(**filtered_output_data)
        return output

    return wrapper


class BackboneMixin:
    def _init_backbone(self, config):
        self.stage_names = ["stem"] + [f"stage{idx}" for idx in range(1, config.num_hidden_layers + 1)]
        self._out_features = config.out_features

    @property
    def out_features(self):
        return self._out_features


class Dinov2Backbone(BackboneMixin, nn.Module):
    def __init__(self, config: Dinov2Config):
        super().__init__()
        self.config = config
        self._init_backbone(config)

        self.num_features = [config.hidden_size for _ in range(config.num_hidden_layers + 1)]
        self.embeddings = Dinov2Embeddings(config)
        self.encoder = Dinov2Encoder(config)

        self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    @filter_output_hidden_states
    def forward(self, pixel_values, attention_mask=None, **kwargs):
        embedding_output = self.embeddings(pixel_values)
        attention_mask = create_bidirectional_mask(
            config=self.config,
            inputs_embeds=embedding_output,
            attention_mask=attention_mask,
        )
        output: BaseModelOutput = self.encoder(embedding_output, attention_mask=attention_mask, **kwargs)
        hidden_states = output.hidden_states

        feature_maps = ()
        for stage, hidden_state in zip(self.stage_names, hidden_states):
            if stage in self.out_features:
                if self.config.apply_layernorm:
                    hidden_state = self.layernorm(hidden_state)
                if self.config.reshape_hidden_states:
                    hidden_state = hidden_state[:, 1:]
                    # this was actually a bug in the original implementation that we copied here,
                    # cause normally the order is height, width
                    batch_size, _, height, width = pixel_values.shape
                    patch_height, patch_width = self.embeddings.patch_embeddings.patch_size
                    hidden_state = hidden_state.reshape(batch_size, height // patch_height, width // patch_width, -1)
                    hidden_state = hidden_state.permute(0, 3, 1, 2).contiguous()
                feature_maps += (hidden_state,)

        return BackboneOutput(
            feature_maps=feature_maps,
            hidden_states=hidden_states,
            attentions=output.attentions,
        )


def build_backbone():
    backbone = Dinov2Backbone(Dinov2Config()).eval()
    return torch.compile(backbone, fullgraph=False)


def make():
    torch.manual_seed(0)
    model = Dinov2Backbone(Dinov2Config()).eval()
    return model, [(torch.randn(2, 3, 8, 8),), (torch.randn(1, 3, 8, 12),)]
