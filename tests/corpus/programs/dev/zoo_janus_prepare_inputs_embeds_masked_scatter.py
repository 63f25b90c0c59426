"""Janus multimodal input embedding: images go through the vision tower and MLP aligner, negative image-placeholder ids are zeroed in place (`input_ids[input_ids < 0] = 0`), and image embeddings are scattered into the text embeddings with boolean masks on both sides (`inputs_embeds[images_seq_mask] = images_embeds[images_emb_mask]`).

Source: deepseek-ai/Janus@1daa72fa409002d40931bd7b36a9280362469ead:janus/models/modeling_vlm.py:190-263
Source: deepseek-ai/Janus@1daa72fa409002d40931bd7b36a9280362469ead:janus/models/projector.py:20-97
Source: deepseek-ai/Janus@1daa72fa409002d40931bd7b36a9280362469ead:janus/models/clip_encoder.py:20-122
Kept: MultiModalityCausalLM.prepare_inputs_embeds and prepare_gen_img_embeds,
MlpProjector (all projector types, tuple/tensor forward), CLIPVisionTower
(feature_select, image_norm, forward_kwargs plumbing) in their original form.
Simplified: einops rearranges written as reshape; AttrDict is a small dict
subclass; torchvision's Normalize is a local module; the SigLIP ViT is a
patch-embedding conv plus one encoder layer; the Llama language model is an
object exposing get_input_embeddings(); no HF PreTrainedModel/config classes.
Sizes: 16x16 images, patch 8 (4 image tokens), width 16, text dim 24.
"""
from typing import Dict, List, Literal, Optional, Tuple, Union

import torch
import torch.nn as nn


class AttrDict(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)


class Normalize(nn.Module):
    """torchvision.transforms.Normalize on a batch of images."""
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean)[:, None, None])
        self.register_buffer("std", torch.tensor(std)[:, None, None])

    def forward(self, images):
        return (images - self.mean) / self.std


class TinySiglipViT(nn.Module):
    """Stand-in for create_siglip_vit(...): patch embedding + one encoder layer."""
    def __init__(self, image_size=16, patch_size=8, width=16, **kwargs):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, width, patch_size, patch_size)
        self.pos_embed = nn.Parameter(torch.randn(1, (image_size // patch_size) ** 2, width) * 0.02)
        self.block = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2) + self.pos_embed
        return self.norm(self.block(x))


def create_siglip_vit(**kwargs):
    return TinySiglipViT(**{k: v for k, v in kwargs.items() if k in ("image_size",)})


class CLIPVisionTower(nn.Module):
    def __init__(
        self,
        model_name: str = "siglip_large_patch16_384",
        image_size: Union[Tuple[int, int], int] = 336,
        select_feature: str = "patch",
        select_layer: int = -2,
        select_layers: list = None,
        ckpt_path: str = "",
        pixel_mean: Optional[List[float]] = None,
        pixel_std: Optional[List[float]] = None,
        **kwargs,
    ):
        super().__init__()

        self.model_name = model_name
        self.select_feature = select_feature
        self.select_layer = select_layer
        self.select_layers = select_layers

        vision_tower_params = {
            "model_name": model_name,
            "image_size": image_size,
            "ckpt_path": ckpt_path,
            "select_layer": select_layer,
        }
        vision_tower_params.update(kwargs)
        self.vision_tower, self.forward_kwargs = self.build_vision_tower(
            vision_tower_params
        )

        if pixel_mean is not None and pixel_std is not None:
            image_norm = Normalize(
                mean=pixel_mean, std=pixel_std
            )
        else:
            image_norm = None

        self.image_norm = image_norm

    def build_vision_tower(self, vision_tower_params):
        if self.model_name.startswith("siglip"):
            self.select_feature = "same"
            vision_tower = create_siglip_vit(**vision_tower_params)
            forward_kwargs = dict()
        else:
            raise ValueError(self.model_name)

        return vision_tower, forward_kwargs

    def feature_select(self, image_forward_outs):
        if isinstance(image_forward_outs, torch.Tensor):
            # the output has been the self.select_layer"s features
            image_features = image_forward_outs
        else:
            image_features = image_forward_outs.hidden_states[self.select_layer]

        if self.select_feature == "patch":
            # if the output has cls_token
            image_features = image_features[:, 1:]
        elif self.select_feature == "cls_patch":
            image_features = image_features
        elif self.select_feature == "same":
            image_features = image_features

        else:
            raise ValueError(f"Unexpected select feature: {self.select_feature}")
        return image_features

    def forward(self, images):
        """

        Args:
            images (torch.Tensor): [b, 3, H, W]

        Returns:
            image_features (torch.Tensor): [b, n_patch, d]
        """

        if self.image_norm is not None:
            images = self.image_norm(images)

        image_forward_outs = self.vision_tower(images, **self.forward_kwargs)
        image_features = self.feature_select(image_forward_outs)
        return image_features


class MlpProjector(nn.Module):
    def __init__(self, cfg):
        super().__init__()

        self.cfg = cfg

        if cfg.projector_type == "identity":
            modules = nn.Identity()

        elif cfg.projector_type == "linear":
            modules = nn.Linear(cfg.input_dim, cfg.n_embed)

        elif cfg.projector_type == "mlp_gelu":
            mlp_depth = cfg.get("depth", 1)
            modules = [nn.Linear(cfg.input_dim, cfg.n_embed)]
            for _ in range(1, mlp_depth):
                modules.append(nn.GELU())
                modules.append(nn.Linear(cfg.n_embed, cfg.n_embed))
            modules = nn.Sequential(*modules)

        elif cfg.projector_type == "low_high_hybrid_split_mlp_gelu":
            mlp_depth = cfg.get("depth", 1)
            self.high_up_proj = nn.Linear(cfg.input_dim, cfg.n_embed // 2)
            self.low_up_proj = nn.Linear(cfg.input_dim, cfg.n_embed // 2)

            modules = []
            for _ in range(1, mlp_depth):
                modules.append(nn.GELU())
                modules.append(nn.Linear(cfg.n_embed, cfg.n_embed))
            modules = nn.Sequential(*modules)

        else:
            raise ValueError(f"Unknown projector type: {cfg.projector_type}")

        self.layers = modules

    def forward(
        self, x_or_tuple: Union[Tuple[torch.Tensor, torch.Tensor], torch.Tensor]
    ):
        if isinstance(x_or_tuple, tuple):
            # self.cfg.projector_type == "low_high_hybrid_split_mlp_gelu":
            high_x, low_x = x_or_tuple
            high_x = self.high_up_proj(high_x)
            low_x = self.low_up_proj(low_x)
            x = torch.concat([high_x, low_x], dim=-1)
        else:
            x = x_or_tuple

        return self.layers(x)


class TinyLlamaForCausalLM(nn.Module):
    """Stand-in for LlamaForCausalLM: only the input embeddings are used here."""
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)

    def get_input_embeddings(self):
        return self.embed_tokens


class MultiModalityCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()

        vision_config = config.vision_config
        self.vision_model = CLIPVisionTower(**vision_config.params)

        aligner_config = config.aligner_config
        self.aligner = MlpProjector(aligner_config.params)

        gen_aligner_config = config.gen_aligner_config
        self.gen_aligner = MlpProjector(gen_aligner_config.params)

        gen_vision_config = config.gen_vision_config
        self.gen_embed = torch.nn.Embedding(
            gen_vision_config.params.image_token_size, gen_vision_config.params.n_embed
        )

        language_config = config.language_config
        self.language_model = TinyLlamaForCausalLM(language_config.vocab_size, language_config.hidden_size)

    def prepare_inputs_embeds(
        self,
        input_ids: torch.LongTensor,
        pixel_values: torch.FloatTensor,
        images_seq_mask: torch.LongTensor,
        images_emb_mask: torch.LongTensor,
        **kwargs,
    ):
        """

        Args:
            input_ids (torch.LongTensor): [b, T]
            pixel_values (torch.FloatTensor):   [b, n_images, 3, h, w]
            images_seq_mask (torch.BoolTensor): [b, T]
            images_emb_mask (torch.BoolTensor): [b, n_images, n_image_tokens]

            assert torch.sum(images_seq_mask) == torch.sum(images_emb_mask)

        Returns:
            input_embeds (torch.Tensor): [b, T, D]
        """

        bs, n = pixel_values.shape[0:2]
        images = pixel_values.reshape(bs * n, *pixel_values.shape[2:])
        # [b x n, T2, D]
        images_embeds = self.aligner(self.vision_model(images))

        # [b x n, T2, D] -> [b, n x T2, D]
        images_embeds = images_embeds.reshape(bs, n * images_embeds.shape[1], images_embeds.shape[2])
        # [b, n, T2] -> [b, n x T2]
        images_emb_mask = images_emb_mask.reshape(images_emb_mask.shape[0], -1)

        # [b, T, D]
        input_ids[input_ids < 0] = 0  # ignore the image embeddings
        inputs_embeds = self.language_model.get_input_embeddings()(input_ids)

        # replace with the image embeddings
        inputs_embeds[images_seq_mask] = images_embeds[images_emb_mask]

        return inputs_embeds

    def prepare_gen_img_embeds(self, image_ids: torch.LongTensor):
        return self.gen_aligner(self.gen_embed(image_ids))


def make_config():
    return AttrDict(
        vision_config=AttrDict(cls="CLIPVisionTower", params=AttrDict(
            model_name="siglip_large_patch16_384", image_size=16, select_feature="same",
            select_layer=-1, pixel_mean=[0.5, 0.5, 0.5], pixel_std=[0.5, 0.5, 0.5])),
        aligner_config=AttrDict(cls="MlpProjector", params=AttrDict(
            projector_type="mlp_gelu", depth=2, input_dim=16, n_embed=24)),
        gen_vision_config=AttrDict(cls="VQ-16", params=AttrDict(image_token_size=64, n_embed=8)),
        gen_aligner_config=AttrDict(cls="MlpProjector", params=AttrDict(
            projector_type="mlp_gelu", depth=2, input_dim=8, n_embed=24)),
        language_config=AttrDict(vocab_size=50, hidden_size=24),
    )


def load_vl_gpt():
    vl_gpt = MultiModalityCausalLM(make_config()).eval()
    prepare = torch.compile(vl_gpt.prepare_inputs_embeds)
    return vl_gpt, prepare


def make():
    torch.manual_seed(0)
    vl_gpt = MultiModalityCausalLM(make_config()).eval()
    # one image of 4 tokens in a 9-token prompt; image slots hold id -1
    input_ids = torch.tensor([[1, 5, -1, -1, -1, -1, 7, 8, 2]])
    images_seq_mask = input_ids < 0
    pixel_values = torch.rand(1, 1, 3, 16, 16)
    images_emb_mask = torch.ones(1, 1, 4, dtype=torch.bool)
    # batch of 2 with two image slots each; the second sample uses only one image
    input_ids2 = torch.full((2, 12), 3)
    input_ids2[0, 1:9] = -1
    input_ids2[1, 2:6] = -1
    images_seq_mask2 = input_ids2 < 0
    pixel_values2 = torch.rand(2, 2, 3, 16, 16)
    images_emb_mask2 = torch.ones(2, 2, 4, dtype=torch.bool)
    images_emb_mask2[1, 1] = False
    return vl_gpt.prepare_inputs_embeds, [
        (input_ids, pixel_values, images_seq_mask, images_emb_mask),
        (input_ids2, pixel_values2, images_seq_mask2, images_emb_mask2),
    ]
