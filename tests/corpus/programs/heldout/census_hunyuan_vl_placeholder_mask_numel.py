"""HunYuan-VL `get_placeholder_mask`: `inputs_embeds[special_image_mask].numel() != image_features.numel()`
validates the image-token count with a boolean-mask read before `masked_scatter`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/hunyuan_vl/modeling_hunyuan_vl.py:986-1011
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10) lists the same check
(`inputs_embeds[special_image_mask].numel() == image_features.numel()`) for AriaModel, Florence2Model,
GotOcr2Model and PaliGemmaModel, eval+train.
Kept: get_placeholder_mask (both the input_ids and the embeddings-lookup paths), the ValueError with its
f-string message, and the caller that scatters image features.
Simplified: a Linear "vision tower"; token ids and sizes are tiny.
"""
import torch
from torch import nn


class Config:
    image_token_id = 7
    vocab_size = 10
    hidden_size = 4


class HunYuanVLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.vision_tower = nn.Linear(6, config.hidden_size)

    def get_input_embeddings(self):
        return self.embed_tokens

    def get_placeholder_mask(self, input_ids, inputs_embeds, image_features=None):
        if input_ids is None:
            placeholder_token_embed = self.get_input_embeddings()(
                torch.full((), self.config.image_token_id, dtype=torch.long, device=inputs_embeds.device)
            )
            special_image_mask = (inputs_embeds == placeholder_token_embed).all(-1)
        else:
            special_image_mask = input_ids == self.config.image_token_id

        n_image_tokens = special_image_mask.sum()
        special_image_mask = special_image_mask.unsqueeze(-1).expand_as(inputs_embeds).to(inputs_embeds.device)
        if image_features is not None and inputs_embeds[special_image_mask].numel() != image_features.numel():
            raise ValueError(
                f"Image features and image tokens do not match: tokens: {n_image_tokens}, "
                f"features {image_features.shape[0]}"
            )
        return special_image_mask

    def forward(self, input_ids=None, pixel_values=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)
        if pixel_values is not None:
            image_features = self.vision_tower(pixel_values)
            special_image_mask = self.get_placeholder_mask(input_ids, inputs_embeds, image_features=image_features)
            inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)
        return inputs_embeds


model = torch.compile(HunYuanVLModel(Config()), dynamic=True)

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    m = HunYuanVLModel(Config())
    ids = torch.tensor([[1, 7, 7, 2]])
    pixels = torch.randn(2, 6)
    embeds = m.embed_tokens(ids).detach()
    return m, [(ids, pixels), (None, pixels, embeds), (ids, torch.randn(3, 6))]
