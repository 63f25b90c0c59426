"""Emu3 image path: VQ-VAE encode and argmin quantizer, per-image crops by image_sizes, img->BPE mapping through cached_property tensors, split and masked_scatter.

Source: huggingface/transformers@v5.23.0:src/transformers/models/emu3/modeling_emu3.py:277-360,992-1103,1327-1482
Kept: Emu3VQVAEVectorQuantizer (squared-distance argmin), Emu3VQVAEConv3d (computed causal padding),
Emu3VQVAETemporalDownsample, Emu3VQVAE.encode (image vs video branch by ndim, repeat over the temporal
factor, quant_conv, list comprehension cropping each code map by `int(size[0] / vision_spatial_factor)`),
Emu3ImageVocabularyMapping (cached_property image_tokens / img2bpe / img2bpe_mapping_tensor built from the
vocabulary dict, convert_img2bpe via `.to("cpu")` indexing and an EOL column), Emu3Model.get_image_features
(split sizes from iterating image_sizes, torch.split), get_placeholder_mask with torch_compilable_check and
Emu3Model.forward (mm_encoder_outputs dict, torch.cat of pooler_output, masked_scatter).
Simplified: the VQ-VAE encoder's resnet/attention down blocks are replaced by one strided Conv2d per frame
plus the real temporal downsample convs; the Emu3 text decoder is a local stand-in (embedding, one linear,
norm); can_return_tuple / output dataclasses are plain dicts; codebook 16, 8x8 images, spatial factor 2.
"""
import math
import os
from functools import cached_property

import torch
import torch.nn.functional as F
from torch import nn


class Emu3VQVAEConfig:
    codebook_size = 16
    embed_dim = 4
    latent_channels = 4
    in_channels = 3
    temporal_downsample_factor = 2
    base_channels = 8
    channel_multiplier = [1, 2]


class Emu3TextConfig:
    vocab_size = 28
    hidden_size = 16
    pad_token_id = 0


def build_vocabulary_map():
    vocab = {f"text{i}": i for i in range(10)}
    vocab["<image>"] = 10
    vocab["<|extra_200|>"] = 11
    for code in range(16):
        vocab[f"<|visual token{code:06d}|>"] = 12 + code
    return vocab


class Emu3Config:
    def __init__(self):
        self.vq_config = Emu3VQVAEConfig()
        self.text_config = Emu3TextConfig()
        self.vocabulary_map = build_vocabulary_map()


def is_tracing(tensor=None):
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def torch_compilable_check(cond, msg, error_type=ValueError):
    if os.getenv("TRANSFORMERS_DISABLE_TORCH_CHECK", "0") == "1":
        return

    if is_tracing():
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
        return

    if not callable(msg):
        def msg_callable():
            return msg
    else:
        msg_callable = msg

    if callable(cond):
        cond = cond()

    if isinstance(cond, torch.Tensor):
        torch._check_tensor_all_with(error_type, cond, msg_callable)
    else:
        torch._check_with(error_type, cond, msg_callable)


class Emu3VQVAEVectorQuantizer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embedding = nn.Embedding(config.codebook_size, config.embed_dim)
        self.embedding.weight.data.uniform_(-1.0 / config.codebook_size, 1.0 / config.codebook_size)

    def forward(self, hidden_state):
        batch_size, temporal, channels, height, width = hidden_state.shape
        hidden_state = hidden_state.permute(0, 1, 3, 4, 2).contiguous()
        hidden_state_flattened = hidden_state.view(-1, channels)

        # distances from z to embeddings e_j (z - e)^2 = z^2 + e^2 - 2 e * z
        hidden_state_sum = torch.sum(hidden_state_flattened**2, dim=1, keepdim=True)
        embedding_sum = torch.sum(self.embedding.weight**2, dim=1)

        # "bd,dn->bn",
        distances = 2 * torch.matmul(hidden_state_flattened, self.embedding.weight.transpose(0, 1))
        distances = hidden_state_sum + embedding_sum - distances

        min_encoding_indices = torch.argmin(distances, dim=1)
        min_encoding_indices = min_encoding_indices.view(batch_size, temporal, height, width)
        return min_encoding_indices


class Emu3VQVAEConv3d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, stride):
        super().__init__()

        padding_sizes = [one_kernel - one_stride for one_kernel, one_stride in zip(kernel_size[1:], stride[1:])]
        self.padding = ()
        for pad_size in padding_sizes[::-1]:
            self.padding += (pad_size // 2 + pad_size % 2, pad_size // 2)
        self.padding += (2, 0)

        self.conv = nn.Conv3d(
            in_channel,
            out_channel,
            kernel_size,
            stride=stride,
        )

    def forward(self, hidden_states):
        hidden_states = F.pad(hidden_states, self.padding)
        hidden_states = self.conv(hidden_states)
        return hidden_states


class Emu3VQVAETemporalDownsample(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv = Emu3VQVAEConv3d(
            in_channel,
            out_channel,
            kernel_size=(4, 3, 3),
            stride=(2, 1, 1),
        )

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states)
        return hidden_states


class Emu3VQVAEEncoder(nn.Module):
    """Stand-in: one strided conv per frame in place of the down/middle blocks, then the real temporal convs."""

    def __init__(self, config):
        super().__init__()
        out_channels = config.latent_channels
        self.conv_in = nn.Conv2d(config.in_channels, config.base_channels, kernel_size=3, stride=2, padding=1)
        self.norm_out = nn.GroupNorm(4, config.base_channels)
        self.conv_out = nn.Conv2d(config.base_channels, out_channels, kernel_size=1)
        temporal_down_blocks = int(math.log2(config.temporal_downsample_factor))
        self.time_conv = nn.ModuleList()
        for i in range(temporal_down_blocks):
            conv = Emu3VQVAETemporalDownsample(out_channels, out_channels)
            self.time_conv.append(conv)

    def forward(self, pixel_values):
        temporal_dim = pixel_values.shape[1]
        pixel_values = pixel_values.reshape(-1, *pixel_values.shape[2:])

        hidden_states = self.conv_in(pixel_values)

        # end
        hidden_states = self.norm_out(hidden_states)
        hidden_states *= torch.sigmoid(hidden_states)
        hidden_states = self.conv_out(hidden_states)

        hidden_states = hidden_states.reshape(-1, temporal_dim, *hidden_states.shape[1:])
        hidden_states = hidden_states.permute(0, 2, 1, 3, 4)

        # temporal convs
        for conv in self.time_conv:
            hidden_states = conv(hidden_states)
            hidden_states *= torch.sigmoid(hidden_states)

        hidden_states = hidden_states.permute(0, 2, 1, 3, 4)

        return hidden_states


class Emu3VQVAE(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

        self.encoder = Emu3VQVAEEncoder(config)
        self.quantize = Emu3VQVAEVectorQuantizer(config)
        self.vision_spatial_factor = 2 ** (len(config.channel_multiplier) - 1)

        self.quant_conv = Emu3VQVAEConv3d(
            config.latent_channels, config.embed_dim, kernel_size=(3, 1, 1), stride=(1, 1, 1)
        )
        self.spatial_scale_factor = 2 ** (len(config.channel_multiplier) - 1)
        self.eval()  # Emu3's VQ model is frozen

    @property
    def dtype(self):
        return self.quant_conv.conv.weight.dtype

    def encode(self, pixel_values, image_sizes, **kwargs):
        is_image = pixel_values.ndim == 4
        if is_image:
            temporal = self.config.temporal_downsample_factor
            batch_size, channels, height, width = pixel_values.shape
            pixel_values = pixel_values.unsqueeze(1).repeat(1, temporal, 1, 1, 1)
        else:
            batch_size, temporal, channels, height, width = pixel_values.shape

        pixel_values = pixel_values.to(self.dtype)
        hidden_states = self.encoder(pixel_values)

        # b t c h w -> b c t h w
        conv_hidden_states = hidden_states.permute(0, 2, 1, 3, 4)
        conv_hidden_states = self.quant_conv(conv_hidden_states)

        # b c t h w -> b t c h w
        conv_hidden_states = conv_hidden_states.permute(0, 2, 1, 3, 4)
        codes = self.quantize(conv_hidden_states)

        image_tokens = codes.squeeze(1) if is_image else codes

        image_tokens = [
            single_image[: int(size[0] / self.vision_spatial_factor), : int(size[1] / self.vision_spatial_factor)]
            for single_image, size in zip(image_tokens, image_sizes)
        ]

        return {"last_hidden_state": hidden_states, "image_tokens": image_tokens}


class Emu3ImageVocabularyMapping:
    """
    A class for mapping discrete image tokens from VQGAN to BPE tokens.
    """

    def __init__(self, vocab_map):
        self.vocab_map = vocab_map
        self.eol_token_id = vocab_map.get("<|extra_200|>")
        self.image_token_id = vocab_map.get("<image>")

    @cached_property
    def image_tokens(self):
        return sorted([val for name, val in self.vocab_map.items() if name.startswith("<|visual token")])

    @cached_property
    def image_tokens_str(self):
        return sorted([name for name, val in self.vocab_map.items() if name.startswith("<|visual token")])

    @cached_property
    def img2bpe(self):
        return {int(token[-8:-2]): self.vocab_map[token] for token in self.image_tokens_str}

    @cached_property
    def bpe2img(self):
        return {v: k for k, v in self.img2bpe.items()}

    @cached_property
    def bpe2img_mapping_tensor(self):
        mapping = torch.zeros(max(self.bpe2img.keys()) + 1, dtype=torch.int)
        for k, v in self.bpe2img.items():
            mapping[k] = v
        return mapping

    @cached_property
    def img2bpe_mapping_tensor(self):
        mapping = torch.zeros(max(self.img2bpe.keys()) + 1, dtype=torch.int)
        for k, v in self.img2bpe.items():
            mapping[k] = v
        return mapping

    def convert_img2bpe(self, img_batch):
        device = img_batch.device
        eol_row = torch.ones((img_batch.shape[0], 1), dtype=torch.int) * self.eol_token_id
        img_tokens = self.img2bpe_mapping_tensor[img_batch.to("cpu")]
        img_tokens = torch.cat([img_tokens, eol_row], dim=-1)
        return img_tokens.to(device)

    def convert_bpe2img(self, img_batch):
        device = img_batch.device
        img_batch = img_batch[..., :-1]  # remove last row of EOL tokens
        img_tokens = self.bpe2img_mapping_tensor[img_batch.to("cpu")]
        return img_tokens.to(device)


class Emu3TextModel(nn.Module):
    """Stand-in for the Emu3 text decoder."""

    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layer = nn.Linear(config.hidden_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size)

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                use_cache=None, **kwargs):
        hidden_states = inputs_embeds + torch.tanh(self.layer(inputs_embeds))
        return {"last_hidden_state": self.norm(hidden_states), "past_key_values": past_key_values}


class Emu3Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.text_model = Emu3TextModel(config.text_config)
        self.vqmodel = Emu3VQVAE(config.vq_config)
        self.vocabulary_mapping = Emu3ImageVocabularyMapping(config.vocabulary_map)

    def get_input_embeddings(self):
        return self.text_model.get_input_embeddings()

    def get_image_features(self, pixel_values, image_sizes, **kwargs):
        vqmodel_outputs = self.vqmodel.encode(pixel_values, image_sizes, return_dict=True, **kwargs)
        split_sizes = [
            (height // self.vqmodel.vision_spatial_factor) * (width // self.vqmodel.vision_spatial_factor + 1)
            for height, width in image_sizes
        ]
        bpe_tokens_list = [
            self.vocabulary_mapping.convert_img2bpe(tokens).flatten() for tokens in vqmodel_outputs["image_tokens"]
        ]
        bpe_tokens = torch.cat(bpe_tokens_list)
        image_embeddings = self.get_input_embeddings()(bpe_tokens)
        vqmodel_outputs["pooler_output"] = torch.split(image_embeddings, split_sizes)
        return vqmodel_outputs

    def get_placeholder_mask(self, input_ids, inputs_embeds, image_features):
        if input_ids is None:
            special_image_mask = inputs_embeds == self.get_input_embeddings()(
                torch.tensor(self.vocabulary_mapping.image_token_id, dtype=torch.long, device=inputs_embeds.device)
            )
            special_image_mask = special_image_mask.all(-1)
        else:
            special_image_mask = input_ids == self.vocabulary_mapping.image_token_id

        n_image_tokens = special_image_mask.sum()
        n_image_features = image_features.shape[0] * image_features.shape[1]
        special_image_mask = special_image_mask.unsqueeze(-1).to(inputs_embeds.device)
        torch_compilable_check(
            n_image_tokens * inputs_embeds.shape[-1] == image_features.numel(),
            f"Image features and image tokens do not match, tokens: {n_image_tokens}, features: {n_image_features}",
        )
        return special_image_mask

    def forward(
        self,
        input_ids=None,
        pixel_values=None,
        image_sizes=None,
        attention_mask=None,
        position_ids=None,
        past_key_values=None,
        inputs_embeds=None,
        use_cache=None,
        mm_encoder_outputs=None,
        **kwargs,
    ):
        if (input_ids is None) ^ (inputs_embeds is not None):
            raise ValueError(
                "You cannot specify both input_ids and inputs_embeds at the same time, and must specify either one"
            )

        if pixel_values is not None and mm_encoder_outputs is not None:
            raise ValueError("You cannot specify both pixel_values and mm_encoder_outputs at the same time")

        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)

        mm_encoder_outputs = mm_encoder_outputs if mm_encoder_outputs is not None else {}
        if mm_encoder_outputs.get("image") is None and pixel_values is not None:
            mm_encoder_outputs["image"] = self.get_image_features(pixel_values, image_sizes)

        if mm_encoder_outputs.get("image") is not None:
            image_features = torch.cat(mm_encoder_outputs["image"]["pooler_output"], dim=0)
            special_image_mask = self.get_placeholder_mask(
                input_ids, inputs_embeds=inputs_embeds, image_features=image_features
            )
            inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)

        outputs = self.text_model(
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )

        return outputs["last_hidden_state"]


def build(config):
    model = Emu3Model(config)
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = Emu3Model(Emu3Config())
    pixel_values = torch.randn(2, 3, 8, 8)
    image_sizes = torch.tensor([[8, 8], [8, 6]])
    ids = torch.randint(1, 10, (2, 24))
    ids[0, 2:22] = 10  # 4 rows x (4 + EOL)
    ids[1, 4:20] = 10  # 4 rows x (3 + EOL)
    one_ids = ids[:1, :22].clone()
    return model, [
        (ids, pixel_values, image_sizes),
        (ids[:, :6],),
        (one_ids, pixel_values[:1], image_sizes[:1]),
    ]
