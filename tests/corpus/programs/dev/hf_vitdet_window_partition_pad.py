"""ViTDet backbone encoder: padded window partition/unpartition, decomposed relative positions via a script_if_tracing helper.

Source: huggingface/transformers@05b030ae7fa09fb7d153eb875e435cfcec975256:src/transformers/models/vitdet/modeling_vitdet.py:150-520
Kept: get_rel_pos (@torch.jit.script_if_tracing, interpolate when the table size differs, float coordinate scaling,
.long() gather), add_decomposed_relative_positions (einsum), VitDetAttention, drop_path/VitDetDropPath,
VitDetLayerNorm, VitDetResBottleneckBlock (loop over self.children()), VitDetMlp, window_partition (pad to a
multiple of the window), window_unpartition, VitDetLayer, and VitDetEncoder (drop-path schedule from
torch.linspace(...).item() at init, window_block_indices / residual_block_indices).
Simplified: the patch embedding is a Conv2d plus a learned absolute position table (no get_absolute_positions
interpolation), outputs are tuples, hidden 8, 2 heads, 4x4 patch grid, window 3 (so the windowed layer pads).
"""
import torch
from torch import nn


class VitDetConfig:
    hidden_size = 8
    num_hidden_layers = 2
    num_attention_heads = 2
    mlp_ratio = 2
    hidden_act = "gelu"
    dropout_prob = 0.0
    drop_path_rate = 0.1
    layer_norm_eps = 1e-6
    image_size = 8
    patch_size = 2
    num_channels = 1
    qkv_bias = True
    use_relative_position_embeddings = True
    window_block_indices = [0]
    residual_block_indices = [1]
    window_size = 3


ACT2FN = {"gelu": nn.GELU()}


class VitDetEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        num_patches = (config.image_size // config.patch_size) ** 2
        self.projection = nn.Conv2d(config.num_channels, config.hidden_size, config.patch_size, config.patch_size)
        self.position_embeddings = nn.Parameter(torch.zeros(1, num_patches, config.hidden_size))

    def forward(self, pixel_values):
        embeddings = self.projection(pixel_values)
        batch_size, channels, height, width = embeddings.shape
        pos = self.position_embeddings.reshape(1, height, width, channels).permute(0, 3, 1, 2)
        return embeddings + pos


@torch.jit.script_if_tracing
def get_rel_pos(q_size, k_size, rel_pos):
    max_rel_dist = int(2 * max(q_size, k_size) - 1)
    if rel_pos.shape[0] != max_rel_dist:
        rel_pos_resized = nn.functional.interpolate(
            rel_pos.reshape(1, rel_pos.shape[0], -1).permute(0, 2, 1),
            size=max_rel_dist,
            mode="linear",
        )
        rel_pos_resized = rel_pos_resized.reshape(-1, max_rel_dist).permute(1, 0)
    else:
        rel_pos_resized = rel_pos

    q_coords = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
    k_coords = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
    relative_coords = (q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)

    return rel_pos_resized[relative_coords.long()]


def add_decomposed_relative_positions(attn, queries, rel_pos_h, rel_pos_w, q_size, k_size):
    queries_height, queries_width = q_size
    keys_height, keys_width = k_size
    relative_height = get_rel_pos(queries_height, keys_height, rel_pos_h)
    relative_width = get_rel_pos(queries_width, keys_width, rel_pos_w)

    batch_size, _, dim = queries.shape
    r_q = queries.reshape(batch_size, queries_height, queries_width, dim)
    relative_height = torch.einsum("bhwc,hkc->bhwk", r_q, relative_height)
    relative_weight = torch.einsum("bhwc,wkc->bhwk", r_q, relative_width)

    attn = (
        attn.view(batch_size, queries_height, queries_width, keys_height, keys_width)
        + relative_height[:, :, :, :, None]
        + relative_weight[:, :, :, None, :]
    ).view(batch_size, queries_height * queries_width, keys_height * keys_width)
    return attn


class VitDetAttention(nn.Module):
    def __init__(self, config, input_size=None):
        super().__init__()
        dim = config.hidden_size
        num_heads = config.num_attention_heads
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=config.qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.use_relative_position_embeddings = config.use_relative_position_embeddings
        if self.use_relative_position_embeddings:
            self.rel_pos_h = nn.Parameter(torch.randn(2 * input_size[0] - 1, head_dim) * 0.02)
            self.rel_pos_w = nn.Parameter(torch.randn(2 * input_size[1] - 1, head_dim) * 0.02)

    def forward(self, hidden_state):
        batch_size, height, width, _ = hidden_state.shape
        qkv = self.qkv(hidden_state).reshape(batch_size, height * width, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        queries, keys, values = qkv.reshape(3, batch_size * self.num_heads, height * width, -1).unbind(0)

        attention_scores = (queries * self.scale) @ keys.transpose(-2, -1)

        if self.use_relative_position_embeddings:
            attention_scores = add_decomposed_relative_positions(
                attention_scores, queries, self.rel_pos_h, self.rel_pos_w, (height, width), (height, width)
            )

        attention_probs = attention_scores.softmax(dim=-1)

        hidden_state = attention_probs @ values
        hidden_state = hidden_state.view(batch_size, self.num_heads, height, width, -1)
        hidden_state = hidden_state.permute(0, 2, 3, 1, 4)
        hidden_state = hidden_state.reshape(batch_size, height, width, -1)
        hidden_state = self.proj(hidden_state)

        attention_probs = attention_probs.reshape(
            batch_size, self.num_heads, attention_probs.shape[-2], attention_probs.shape[-1]
        )
        return hidden_state, attention_probs


def drop_path(input: torch.Tensor, drop_prob: float = 0.0, training: bool = False) -> torch.Tensor:
    if drop_prob == 0.0 or not training:
        return input
    keep_prob = 1 - drop_prob
    shape = (input.shape[0],) + (1,) * (input.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=input.dtype, device=input.device)
    random_tensor.floor_()
    output = input.div(keep_prob) * random_tensor
    return output


class VitDetDropPath(nn.Module):
    def __init__(self, drop_prob=None) -> None:
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, hidden_states):
        return drop_path(hidden_states, self.drop_prob, self.training)


class VitDetLayerNorm(nn.Module):
    def __init__(self, normalized_shape, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.normalized_shape = (normalized_shape,)

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        x = self.weight[:, None, None] * x + self.bias[:, None, None]
        return x


class VitDetResBottleneckBlock(nn.Module):
    def __init__(self, config, in_channels, out_channels, bottleneck_channels):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, bottleneck_channels, 1, bias=False)
        self.norm1 = VitDetLayerNorm(bottleneck_channels)
        self.act1 = ACT2FN[config.hidden_act]
        self.conv2 = nn.Conv2d(bottleneck_channels, bottleneck_channels, 3, padding=1, bias=False)
        self.norm2 = VitDetLayerNorm(bottleneck_channels)
        self.act2 = ACT2FN[config.hidden_act]
        self.conv3 = nn.Conv2d(bottleneck_channels, out_channels, 1, bias=False)
        self.norm3 = VitDetLayerNorm(out_channels)

    def forward(self, x):
        out = x
        for layer in self.children():
            out = layer(out)
        out = x + out
        return out


class VitDetMlp(nn.Module):
    def __init__(self, config, in_features: int, hidden_features: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = ACT2FN[config.hidden_act]
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop = nn.Dropout(config.dropout_prob)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


def window_partition(hidden_state, window_size):
    batch_size, height, width, num_channels = hidden_state.shape

    pad_height = (window_size - height % window_size) % window_size
    pad_width = (window_size - width % window_size) % window_size

    hidden_state = nn.functional.pad(hidden_state, (0, 0, 0, pad_width, 0, pad_height))

    padded_height, padded_width = height + pad_height, width + pad_width

    hidden_state = hidden_state.view(
        batch_size, padded_height // window_size, window_size, padded_width // window_size, window_size, num_channels
    )
    windows = hidden_state.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, num_channels)
    return windows, (padded_height, padded_width)


def window_unpartition(windows, window_size, pad_height_width, height_width):
    padded_height, padded_width = pad_height_width
    height, width = height_width
    batch_size = windows.shape[0] // (padded_height * padded_width // window_size // window_size)
    hidden_state = windows.view(
        batch_size, padded_height // window_size, padded_width // window_size, window_size, window_size, -1
    )
    hidden_state = hidden_state.permute(0, 1, 3, 2, 4, 5).contiguous()
    hidden_state = hidden_state.view(batch_size, padded_height, padded_width, -1)
    hidden_state = hidden_state[:, :height, :width, :].contiguous()
    return hidden_state


class VitDetLayer(nn.Module):
    def __init__(self, config, drop_path_rate: float = 0, window_size: int = 0, use_residual_block: bool = False):
        super().__init__()
        dim = config.hidden_size
        image_size = config.image_size
        image_size = image_size if isinstance(image_size, (list, tuple)) else (image_size, image_size)
        patch_size = config.patch_size
        patch_size = patch_size if isinstance(patch_size, (list, tuple)) else (patch_size, patch_size)

        input_size = (image_size[0] // patch_size[0], image_size[1] // patch_size[1])
        self.norm1 = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.attention = VitDetAttention(
            config, input_size=input_size if window_size == 0 else (window_size, window_size)
        )
        self.drop_path = VitDetDropPath(drop_path_rate) if drop_path_rate > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.mlp = VitDetMlp(config=config, in_features=dim, hidden_features=int(dim * config.mlp_ratio))
        self.window_size = window_size
        self.use_residual_block = use_residual_block
        if self.use_residual_block:
            self.residual = VitDetResBottleneckBlock(
                config=config,
                in_channels=dim,
                out_channels=dim,
                bottleneck_channels=dim // 2,
            )

    def forward(self, hidden_states):
        hidden_states = hidden_states.permute(0, 2, 3, 1)
        shortcut = hidden_states
        hidden_states = self.norm1(hidden_states)

        if self.window_size > 0:
            height, width = hidden_states.shape[1], hidden_states.shape[2]
            hidden_states, pad_height_width = window_partition(hidden_states, self.window_size)

        hidden_states = self.attention(hidden_states)[0]

        if self.window_size > 0:
            hidden_states = window_unpartition(hidden_states, self.window_size, pad_height_width, (height, width))

        hidden_states = shortcut + self.drop_path(hidden_states)
        hidden_states = hidden_states + self.drop_path(self.mlp(self.norm2(hidden_states)))
        hidden_states = hidden_states.permute(0, 3, 1, 2)

        if self.use_residual_block:
            hidden_states = self.residual(hidden_states)
        return hidden_states


class VitDetEncoder(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        depth = config.num_hidden_layers
        drop_path_rate = [x.item() for x in torch.linspace(0, config.drop_path_rate, depth, device="cpu")]
        layers = []
        for i in range(depth):
            layers.append(
                VitDetLayer(
                    config,
                    drop_path_rate=drop_path_rate[i],
                    window_size=config.window_size if i in config.window_block_indices else 0,
                    use_residual_block=i in config.residual_block_indices,
                )
            )
        self.layer = nn.ModuleList(layers)

    def forward(self, hidden_states, output_hidden_states=False):
        all_hidden_states = () if output_hidden_states else None
        for i, layer_module in enumerate(self.layer):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            hidden_states = layer_module(hidden_states)
        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)
        return hidden_states, all_hidden_states


class VitDetModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = VitDetEmbeddings(config)
        self.encoder = VitDetEncoder(config)

    def forward(self, pixel_values, output_hidden_states=False):
        embedding_output = self.embeddings(pixel_values)
        return self.encoder(embedding_output, output_hidden_states=output_hidden_states)


def build_backbone():
    model = VitDetModel(VitDetConfig()).eval()
    return torch.compile(model, mode="reduce-overhead")


def make():
    torch.manual_seed(0)
    return VitDetModel(VitDetConfig()).eval(), [
        (torch.randn(2, 1, 8, 8),),
        (torch.randn(1, 1, 8, 8), True),
    ]
