"""Kosmos-2: latent-query projection of normalized image features, written into the token embeddings through a boolean position mask (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/kosmos2/modeling_kosmos2.py:949-985,1312-1340,1376-1400,1402-1470
Kept: Kosmos2Model.get_image_features (post_layernorm over the whole last hidden state,
normalize, the image-to-text projection), Kosmos2ImageToTextProjection
(dense, latent queries expanded per batch and concatenated as keys/values),
Kosmos2Model.forward's `image_embeds is None` / pixel_values ValueError, and
the text model's forward_embedding (masked assignment of the image embeddings
at `img_input_mask.to(dtype=torch.bool)`, embed scale, dropout).
Simplified: the vision tower is a patch linear; KosmosTextAttention is
q/k/v linears around scaled_dot_product_attention; positions are a learned
table (the M2M100 sinusoidal table is elsewhere in the corpus); the text
decoder is one linear layer; the deprecated `return_attentions` kwarg
check is left out.
"""
import math

import torch
from torch import nn


class Kosmos2Config:
    vision_hidden_size = 12
    patch_dim = 6
    embed_dim = 8
    latent_query_num = 3
    vocab_size = 20
    max_position_embeddings = 16
    dropout = 0.1
    scale_embedding = True


class Kosmos2VisionModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.patch_embed = nn.Linear(config.patch_dim, config.vision_hidden_size)
        self.post_layernorm = nn.LayerNorm(config.vision_hidden_size)

    def forward(self, pixel_values, interpolate_pos_encoding=False):
        return (self.patch_embed(pixel_values),)


class Kosmos2ImageToTextProjection(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.vision_hidden_size, config.embed_dim)
        self.latent_query = nn.Parameter(torch.randn(config.latent_query_num, config.embed_dim))
        self.q_proj = nn.Linear(config.embed_dim, config.embed_dim)
        self.kv_proj = nn.Linear(config.embed_dim, 2 * config.embed_dim)

    def x_attn(self, hidden_states, encoder_hidden_states):
        key_states, value_states = self.kv_proj(encoder_hidden_states).chunk(2, dim=-1)
        attn_output = nn.functional.scaled_dot_product_attention(self.q_proj(hidden_states), key_states, value_states)
        return attn_output, None

    def forward(self, features):
        hidden_states = self.dense(features)

        # shape = [batch, latent_query_num, h_dim]
        latent_query = self.latent_query.unsqueeze(0).expand(hidden_states.size(0), -1, -1)
        key_value_states = torch.cat([hidden_states, latent_query], dim=1)

        hidden_states, attn_weights = self.x_attn(hidden_states=latent_query, encoder_hidden_states=key_value_states)

        return hidden_states, attn_weights


class Kosmos2TextTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dropout = config.dropout
        self.embed_scale = math.sqrt(config.embed_dim) if config.scale_embedding else 1.0
        self.embed_tokens = nn.Embedding(config.vocab_size, config.embed_dim)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, config.embed_dim)
        self.layer = nn.Linear(config.embed_dim, config.embed_dim)

    def forward_embedding(self, input_ids, inputs_embeds=None, image_embeds=None, img_input_mask=None):
        # The argument `inputs_embeds` should be the one without being multiplied by `self.embed_scale`.
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)

        if image_embeds is not None:
            inputs_embeds[img_input_mask.to(dtype=torch.bool)] = image_embeds.to(
                inputs_embeds.device, inputs_embeds.dtype
            ).view(-1, image_embeds.size(-1))

        inputs_embeds = inputs_embeds * self.embed_scale

        positions = self.embed_positions(torch.arange(input_ids.shape[1], device=input_ids.device))[None]
        hidden_states = inputs_embeds + positions

        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        return hidden_states

    def forward(self, input_ids, image_embeds=None, image_embeds_position_mask=None):
        hidden_states = self.forward_embedding(
            input_ids=input_ids, image_embeds=image_embeds, img_input_mask=image_embeds_position_mask
        )
        return torch.tanh(self.layer(hidden_states))


class Kosmos2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.text_model = Kosmos2TextTransformer(config)
        self.vision_model = Kosmos2VisionModel(config)
        self.image_to_text_projection = Kosmos2ImageToTextProjection(config)

    def get_image_features(self, pixel_values, interpolate_pos_encoding=False, **kwargs):
        vision_output = self.vision_model(pixel_values=pixel_values, interpolate_pos_encoding=interpolate_pos_encoding)
        # The whole `last_hidden_state` through `post_layernorm` instead of just `pooled_output`.
        image_embeds = self.vision_model.post_layernorm(vision_output[0])
        # normalized features
        image_embeds = nn.functional.normalize(image_embeds, dim=-1)
        image_embeds, projection_attentions = self.image_to_text_projection(image_embeds)
        return image_embeds, projection_attentions

    def forward(self, pixel_values=None, input_ids=None, image_embeds_position_mask=None, image_embeds=None, **kwargs):
        projection_attentions = None
        if image_embeds is None:
            if pixel_values is None:
                raise ValueError("You have to specify either `pixel_values` or `image_embeds`.")
            image_embeds, projection_attentions = self.get_image_features(pixel_values, **kwargs)

        last_hidden_state = self.text_model(
            input_ids=input_ids,
            image_embeds=image_embeds,
            image_embeds_position_mask=image_embeds_position_mask,
        )
        return last_hidden_state, image_embeds, projection_attentions


model = torch.compile(Kosmos2Model(Kosmos2Config()))


def make():
    torch.manual_seed(0)
    pixel_values = torch.randn(2, 4, 6)
    input_ids = torch.randint(0, 20, (2, 7))
    position_mask = torch.tensor([[0, 1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 0, 0, 0]])
    image_embeds = torch.randn(2, 3, 8)
    return Kosmos2Model(Kosmos2Config()), [
        (pixel_values, input_ids, position_mask),
        (None, input_ids, position_mask, image_embeds),
    ]
