"""InternVL image path: CLS drop, pixel_shuffle downsampling, projector, placeholder mask and masked_scatter.

Source: huggingface/transformers@00779a6b506f084e402f1b3c8f220a87242b32c6:src/transformers/models/internvl/modeling_internvl.py:560-760
(line range approximate; the parts used are named below)
(InternVLMultiModalProjector, InternVLModel.get_image_features / forward / pixel_shuffle,
InternVLForConditionalGeneration.forward's logits_to_keep slice)
Kept: `vision_feature_layer == -1` choice of last_hidden_state vs hidden_states[layer], the
`vision_feature_select_strategy == "default"` CLS drop, `int(channels**0.5)` feature size, pixel_shuffle
with its `% scale_factor` raise and int(...) view sizes, the placeholder mask from input_ids or from an
embedding comparison, `not is_torchdynamo_compiling() and inputs_embeds[mask].numel() != ...` check,
masked_scatter, `slice(-logits_to_keep, None) if isinstance(logits_to_keep, int)`.
Simplified: the InternVL vision transformer is a patch conv + CLS token + one encoder layer stand-in
returning (last_hidden_state, hidden_states); the Qwen2 language model is replaced by a LayerNorm over
the merged embeddings; tiny sizes.
"""
import torch
from torch import nn


def is_torchdynamo_compiling():
    return torch.compiler.is_compiling()


class InternVLVisionConfig:
    hidden_size = 16
    patch_size = 4
    num_channels = 3


class InternVLTextConfig:
    hidden_size = 24
    vocab_size = 40


class InternVLConfig:
    vision_config = InternVLVisionConfig()
    text_config = InternVLTextConfig()
    downsample_ratio = 0.5
    projector_hidden_act = "gelu"
    image_token_id = 5
    vision_feature_layer = -1
    vision_feature_select_strategy = "default"
    output_attentions = False
    output_hidden_states = False
    use_return_dict = True


class VisionOutput:
    def __init__(self, last_hidden_state, hidden_states):
        self.last_hidden_state = last_hidden_state
        self.hidden_states = hidden_states


class InternVLVisionStandIn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.patch_embeddings = nn.Conv2d(
            config.num_channels, config.hidden_size, kernel_size=config.patch_size, stride=config.patch_size
        )
        self.cls_token = nn.Parameter(torch.zeros(1, 1, config.hidden_size))
        self.layer = nn.TransformerEncoderLayer(config.hidden_size, 2, 32, dropout=0.0, batch_first=True)

    def forward(self, pixel_values):
        embeddings = self.patch_embeddings(pixel_values).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(embeddings.shape[0], -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        hidden = self.layer(embeddings)
        return VisionOutput(hidden, (embeddings, hidden))


class InternVLMultiModalProjector(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer_norm = nn.LayerNorm(config.vision_config.hidden_size * int(1 / config.downsample_ratio) ** 2)
        self.linear_1 = nn.Linear(
            config.vision_config.hidden_size * int(1 / config.downsample_ratio) ** 2, config.text_config.hidden_size
        )
        self.act = nn.GELU()
        self.linear_2 = nn.Linear(config.text_config.hidden_size, config.text_config.hidden_size)

    def forward(self, image_features):
        hidden_states = self.layer_norm(image_features)
        hidden_states = self.linear_1(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.linear_2(hidden_states)
        return hidden_states


class InternVLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.vision_tower = InternVLVisionStandIn(config.vision_config)
        self.vision_model = self.vision_tower
        self.multi_modal_projector = InternVLMultiModalProjector(config)
        self.embed_tokens = nn.Embedding(config.text_config.vocab_size, config.text_config.hidden_size)
        self.language_model = nn.LayerNorm(config.text_config.hidden_size)

    def get_input_embeddings(self):
        return self.embed_tokens

    def get_image_features(self, pixel_values, vision_feature_layer, vision_feature_select_strategy, **kwargs):
        downsample_ratio = self.config.downsample_ratio
        if vision_feature_layer == -1:
            vision_features = self.vision_tower(pixel_values=pixel_values).last_hidden_state
        else:
            vision_features = self.vision_model(pixel_values=pixel_values).hidden_states[vision_feature_layer]
        if vision_feature_select_strategy == "default":
            vision_features = vision_features[:, 1:, :]

        channels = vision_features.shape[1]
        feature_size = int(channels**0.5)
        batch_size = vision_features.shape[0]

        vision_features = vision_features.reshape(batch_size, feature_size, feature_size, -1)

        vision_features = self.pixel_shuffle(vision_features, scale_factor=downsample_ratio)

        vision_features = vision_features.reshape(batch_size, -1, vision_features.shape[-1])

        vision_features = self.multi_modal_projector(vision_features)

        return vision_features

    def forward(self, input_ids=None, pixel_values=None, attention_mask=None, inputs_embeds=None,
                vision_feature_layer=None, vision_feature_select_strategy=None, image_sizes=None):
        vision_feature_layer = (
            vision_feature_layer if vision_feature_layer is not None else self.config.vision_feature_layer
        )
        vision_feature_select_strategy = (
            vision_feature_select_strategy
            if vision_feature_select_strategy is not None
            else self.config.vision_feature_select_strategy
        )

        if (input_ids is None) ^ (inputs_embeds is not None):
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")

        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)

        image_features = None
        if pixel_values is not None:
            image_features = self.get_image_features(
                pixel_values=pixel_values,
                vision_feature_layer=vision_feature_layer,
                vision_feature_select_strategy=vision_feature_select_strategy,
                image_sizes=image_sizes,
            )

            if input_ids is None:
                special_image_mask = inputs_embeds == self.get_input_embeddings()(
                    torch.tensor(self.config.image_token_id, dtype=torch.long, device=inputs_embeds.device)
                )
                n_image_tokens = (special_image_mask).sum(dim=1).sum(dim=0)[0]
            else:
                special_image_mask = (input_ids == self.config.image_token_id).unsqueeze(-1)
                special_image_mask = special_image_mask.expand_as(inputs_embeds).to(inputs_embeds.device)
                n_image_tokens = (input_ids == self.config.image_token_id).sum()

            if not is_torchdynamo_compiling() and inputs_embeds[special_image_mask].numel() != image_features.numel():
                n_image_tokens = (input_ids == self.config.image_token_id).sum()
                n_image_features = image_features.shape[0] * image_features.shape[1]
                raise ValueError(
                    f"Image features and image tokens do not match: tokens: {n_image_tokens}, features {n_image_features}"
                )
            image_features = image_features.to(inputs_embeds.device, inputs_embeds.dtype)
            inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)

        last_hidden_state = self.language_model(inputs_embeds)
        return last_hidden_state, image_features

    def pixel_shuffle(self, vision_features, scale_factor=0.5):
        batch_size, width, height, channels = vision_features.size()

        if height % scale_factor != 0 or width % scale_factor != 0:
            raise ValueError("Height and width must be divisible by scale_factor for proper downsampling.")

        vision_features = vision_features.view(
            batch_size, width, int(height * scale_factor), int(channels / scale_factor)
        )
        vision_features = vision_features.permute(0, 2, 1, 3).contiguous()
        vision_features = vision_features.view(
            batch_size, int(height * scale_factor), int(width * scale_factor), int(channels / (scale_factor**2))
        )
        vision_features = vision_features.permute(0, 2, 1, 3).contiguous()
        return vision_features


class InternVLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = InternVLModel(config)
        self.lm_head = nn.Linear(config.text_config.hidden_size, config.text_config.vocab_size, bias=False)

    def forward(self, input_ids=None, pixel_values=None, attention_mask=None, inputs_embeds=None,
                vision_feature_layer=None, vision_feature_select_strategy=None, logits_to_keep=0):
        vision_feature_layer = (
            vision_feature_layer if vision_feature_layer is not None else self.config.vision_feature_layer
        )
        vision_feature_select_strategy = (
            vision_feature_select_strategy
            if vision_feature_select_strategy is not None
            else self.config.vision_feature_select_strategy
        )

        outputs = self.model(
            input_ids=input_ids,
            pixel_values=pixel_values,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            vision_feature_layer=vision_feature_layer,
            vision_feature_select_strategy=vision_feature_select_strategy,
        )

        hidden_states = outputs[0]
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, slice_indices, :])
        return logits, outputs[1]


@torch.no_grad()
def generate_step(model, input_ids, pixel_values):
    step = torch.compile(model, fullgraph=False)
    return step(input_ids, pixel_values, logits_to_keep=1)


def make():
    torch.manual_seed(0)
    model = InternVLForConditionalGeneration(InternVLConfig()).eval()
    pixel_values = torch.randn(2, 3, 16, 16)
    # 16/4 = 4x4 patches -> pixel_shuffle 0.5 -> 2x2 = 4 image tokens per image
    ids = torch.randint(6, 40, (2, 9))
    ids[:, 1:5] = 5
    text_ids = torch.randint(6, 40, (1, 4))
    return model, [
        (ids, pixel_values, None, None, None, None, 1),
        (ids, pixel_values, None, None, -2, "default", 0),
        (None, pixel_values, None, model.model.embed_tokens(ids).detach()),
        (text_ids,),
    ]
