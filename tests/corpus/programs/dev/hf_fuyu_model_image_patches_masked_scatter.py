"""Fuyu multimodal model: per-image patch projection list, torch.cat, masked_scatter into the text embeddings.

Source: huggingface/transformers@v4.53.0:src/transformers/models/fuyu/modeling_fuyu.py:67-80,139-230,238-365
Kept: FuyuModel.get_image_features (list comprehension over pixel_values with the
dtype cast and squeeze(0)), FuyuModel.forward's config-default plumbing, the
input_ids/inputs_embeds validation chain, past length from the legacy tuple, position_ids
from arange when None, the `image_patches is not None and past_key_values is None` branch (torch.cat, special_image_mask expand_as,
masked_scatter); FuyuForCausalLM.forward's logits_to_keep slice and optional loss.
Simplified: the Persimmon language model is a stand-in (embedding + one linear
layer with tanh), no KV cache, hidden 8, 4x4x1 patches; loss is plain shifted CE.
"""
import torch
from torch import nn


class TextConfig:
    vocab_size = 20
    hidden_size = 8


class FuyuConfig:
    text_config = TextConfig()
    hidden_size = 8
    patch_size = 2
    num_channels = 1
    pad_token_id = 0
    image_token_id = 19
    output_attentions = False
    output_hidden_states = False
    use_cache = False
    use_return_dict = True


class LanguageModelStandIn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.pos = nn.Embedding(32, config.hidden_size)
        self.layer = nn.Linear(config.hidden_size, config.hidden_size)

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, inputs_embeds=None, attention_mask=None, position_ids=None, past_key_values=None,
                output_attentions=None, output_hidden_states=None, use_cache=None, return_dict=None, **kwargs):
        hidden = torch.tanh(self.layer(inputs_embeds + self.pos(position_ids)))
        if attention_mask is not None:
            hidden = hidden * attention_mask[..., None].to(hidden.dtype)
        return (hidden,)


class FuyuModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.padding_idx = config.pad_token_id
        self.vocab_size = config.text_config.vocab_size
        self.language_model = LanguageModelStandIn(config.text_config)
        self.vision_embed_tokens = nn.Linear(
            config.patch_size * config.patch_size * config.num_channels, config.hidden_size
        )

    def get_image_features(self, pixel_values, **kwargs):
        patch_embeddings = [
            self.vision_embed_tokens(patch.to(self.vision_embed_tokens.weight.dtype)).squeeze(0)
            for patch in pixel_values
        ]
        return patch_embeddings

    def forward(self, input_ids=None, image_patches=None, image_patches_indices=None, attention_mask=None,
                position_ids=None, past_key_values=None, inputs_embeds=None, use_cache=None,
                output_attentions=None, output_hidden_states=None, return_dict=None, **kwargs):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("You cannot specify both input_ids and inputs_embeds at the same time")
        elif input_ids is not None:
            batch_size, seq_length = input_ids.shape
        elif inputs_embeds is not None:
            batch_size, seq_length, _ = inputs_embeds.shape
        else:
            raise ValueError("You have to specify either input_is or inputs_embeds")

        seq_length_with_past = seq_length
        past_key_values_length = 0

        if past_key_values is not None:
            past_key_values_length = past_key_values[0][0].shape[2]
            seq_length_with_past = seq_length_with_past + past_key_values_length

        if position_ids is None:
            device = input_ids.device if input_ids is not None else inputs_embeds.device
            position_ids = torch.arange(
                past_key_values_length, seq_length + past_key_values_length, dtype=torch.long, device=device
            )
            position_ids = position_ids.unsqueeze(0)

        if inputs_embeds is None:
            inputs_embeds = self.language_model.get_input_embeddings()(input_ids)
            if image_patches is not None and past_key_values is None:
                patch_embeddings = self.get_image_features(image_patches)
                patch_embeddings = torch.cat(patch_embeddings, dim=0)

                special_image_mask = (input_ids == self.config.image_token_id).unsqueeze(-1)
                special_image_mask = special_image_mask.expand_as(inputs_embeds).to(inputs_embeds.device)
                patch_embeddings = patch_embeddings.to(inputs_embeds.device, inputs_embeds.dtype)
                inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, patch_embeddings)

        outputs = self.language_model(
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            use_cache=use_cache,
            return_dict=return_dict,
            **kwargs,
        )
        return outputs


class FuyuForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = FuyuModel(config)
        self.lm_head = nn.Linear(config.text_config.hidden_size, config.text_config.vocab_size, bias=False)

    def loss_function(self, logits, labels, vocab_size, **kwargs):
        shift_logits = logits[:, :-1].reshape(-1, vocab_size).float()
        shift_labels = labels[:, 1:].reshape(-1)
        return nn.functional.cross_entropy(shift_logits, shift_labels, ignore_index=-100)

    def forward(self, input_ids=None, image_patches=None, image_patches_indices=None, attention_mask=None,
                position_ids=None, past_key_values=None, inputs_embeds=None, use_cache=None, labels=None,
                output_attentions=None, output_hidden_states=None, return_dict=None, logits_to_keep=0, **kwargs):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        outputs = self.model(
            input_ids=input_ids,
            image_patches=image_patches,
            image_patches_indices=image_patches_indices,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            use_cache=use_cache,
            return_dict=True,
        )

        hidden_states = outputs[0]
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, slice_indices, :])

        loss = None
        if labels is not None:
            loss = self.loss_function(
                logits=logits, labels=labels, vocab_size=self.config.text_config.vocab_size, **kwargs
            )
        return (loss, logits)


model = FuyuForCausalLM(FuyuConfig()).eval()
model.compile()


def make():
    torch.manual_seed(0)
    ids = torch.randint(1, 18, (2, 7))
    ids[:, 1:4] = 19
    patches = torch.randn(2, 3, 4)
    mask = torch.ones(2, 7)
    return FuyuForCausalLM(FuyuConfig()).eval(), [
        (ids, patches, None, mask),
        (ids, patches, None, None, None, None, None, None, ids),
        (torch.randint(1, 18, (2, 7)),),
    ]
