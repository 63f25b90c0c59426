"""LFM2-VL image features: each image is unpadded with `feature[: img_feature_lengths[img_idx], :]` and reshaped with `feature_org_h, feature_org_w = spatial_shapes[img_idx]` (tensor-valued sizes), then scattered into the text embeddings.

Source: huggingface/transformers@v5.23.0:src/transformers/models/lfm2_vl/modeling_lfm2_vl.py:36-74,160-228,255-281
Census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10 and corpus issue #92 (Lfm2VlForConditionalGeneration, modeling_lfm2_vl.py:230-233).
Kept: get_image_features' loop verbatim (lengths from pixel_attention_mask.sum,
tensor slice bound, tensor unpack into reshape), the projector with
pixel_unshuffle, get_placeholder_mask with its f-string check message, and the
masked_scatter merge in forward.
Simplified: the vision tower is a linear layer over patches; the
language model is left out (the merged embeddings are returned);
torch_compilable_check is the torch._check_with form only.
"""
import torch
from torch import nn


def torch_compilable_check(cond, msg, error_type=ValueError):
    if not callable(msg):
        def msg_callable():
            return msg
    else:
        msg_callable = msg
    if isinstance(cond, torch.Tensor):
        torch._check_tensor_all_with(error_type, cond, msg_callable)
    else:
        torch._check_with(error_type, cond, msg_callable)


class Lfm2VlConfig:
    vision_hidden_size = 4
    downsample_factor = 2
    projector_use_layernorm = True
    projector_hidden_size = 8
    projector_bias = True
    text_hidden_size = 8
    vocab_size = 20
    image_token_id = 19


class Lfm2VlMultiModalProjector(nn.Module):
    def __init__(self, config):
        super().__init__()
        in_channels = config.vision_hidden_size * (config.downsample_factor**2)
        self.factor = config.downsample_factor
        self.use_layer_norm = config.projector_use_layernorm
        self.layer_norm = nn.LayerNorm(in_channels) if config.projector_use_layernorm else None
        self.linear_1 = nn.Linear(in_channels, config.projector_hidden_size, bias=config.projector_bias)
        self.act = nn.GELU()
        self.linear_2 = nn.Linear(config.projector_hidden_size, config.text_hidden_size, bias=config.projector_bias)

    def forward(self, image_features):
        image_features = self.pixel_unshuffle(image_features)
        if self.use_layer_norm:
            image_features = self.layer_norm(image_features)
        hidden_states = self.linear_1(image_features)
        hidden_states = self.act(hidden_states)
        hidden_states = self.linear_2(hidden_states)
        return hidden_states

    def pixel_unshuffle(self, hidden_states):
        batch_size, width, height, channels = hidden_states.size()
        hidden_states = hidden_states.reshape(batch_size, width, height // self.factor, channels * self.factor)
        hidden_states = hidden_states.permute(0, 2, 1, 3)
        hidden_states = hidden_states.reshape(
            batch_size, height // self.factor, width // self.factor, channels * self.factor**2
        )
        hidden_states = hidden_states.permute(0, 2, 1, 3)
        return hidden_states


class Lfm2VlModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.vision_tower = nn.Linear(3, config.vision_hidden_size)
        self.multi_modal_projector = Lfm2VlMultiModalProjector(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.text_hidden_size)

    def get_input_embeddings(self):
        return self.embed_tokens

    def get_image_features(self, pixel_values, spatial_shapes, pixel_attention_mask):
        last_hidden_state = self.vision_tower(pixel_values)

        img_feature_lengths = pixel_attention_mask.sum(dim=1)
        image_features = []

        for img_idx in range(last_hidden_state.size(0)):
            feature = last_hidden_state[img_idx]
            # unpad the image representation
            feature = feature[: img_feature_lengths[img_idx], :].unsqueeze(0)

            # reshape to original height and width
            feature_org_h, feature_org_w = spatial_shapes[img_idx]
            feature = feature.reshape(1, feature_org_h, feature_org_w, -1)

            # project the image representation
            img_embedding = self.multi_modal_projector(feature)

            # flatten here to handle variable length in naflex
            img_embedding = img_embedding.reshape(-1, img_embedding.size(-1))
            image_features.append(img_embedding)

        return image_features

    def get_placeholder_mask(self, input_ids, inputs_embeds, image_features):
        if input_ids is None:
            special_image_mask = inputs_embeds == self.get_input_embeddings()(
                torch.full((), self.config.image_token_id, dtype=torch.long, device=inputs_embeds.device)
            )
            special_image_mask = special_image_mask.all(-1)
        else:
            special_image_mask = input_ids == self.config.image_token_id

        n_image_tokens = special_image_mask.sum()
        special_image_mask = special_image_mask.unsqueeze(-1).to(inputs_embeds.device)
        n_image_features = image_features.shape[0]
        torch_compilable_check(
            n_image_tokens * inputs_embeds.shape[-1] == image_features.numel(),
            f"Image features and image tokens do not match, tokens: {n_image_tokens}, features: {n_image_features}",
        )
        return special_image_mask

    def forward(self, input_ids=None, pixel_values=None, spatial_shapes=None, pixel_attention_mask=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)

        if pixel_values is not None:
            image_features = self.get_image_features(
                pixel_values=pixel_values,
                spatial_shapes=spatial_shapes,
                pixel_attention_mask=pixel_attention_mask,
            )
            image_features = torch.cat(image_features, dim=0).to(inputs_embeds.device, inputs_embeds.dtype)
            special_image_mask = self.get_placeholder_mask(
                input_ids=input_ids,
                inputs_embeds=inputs_embeds,
                image_features=image_features,
            )
            inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)
        return inputs_embeds


def make():
    torch.manual_seed(0)
    # two images: 4x4 patches (16 valid) and 2x4 patches (8 valid, 8 padding)
    pixel_values = torch.randn(2, 16, 3)
    pixel_attention_mask = torch.tensor([[1] * 16, [1] * 8 + [0] * 8])
    spatial_shapes = torch.tensor([[4, 4], [2, 4]])
    input_ids = torch.tensor([[1, 2] + [19] * 6 + [3]])
    return Lfm2VlModel(Lfm2VlConfig()), [(input_ids, pixel_values, spatial_shapes, pixel_attention_mask), (input_ids[:, :2],)]


model = torch.compile(Lfm2VlModel(Lfm2VlConfig()), backend="inductor")
