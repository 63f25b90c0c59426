"""PaliGemma (early port) forward: `_merge_input_ids_with_image_features` branches on
`attention_mask[:, 0].sum() == 0` (left padding) and loops over the batch with `text_tokens_mask.sum().item()`
to place image and text embeddings; the cached-generation branch rebuilds the mask with torch.where on the
first layer's keys; the loss keeps only attended positions by boolean indexing.

Source: huggingface/transformers@00d292288ed27237d0f02b8a335039af7d513427:src/transformers/models/paligemma/modeling_paligemma.py:PaLIGemmaMultiModalProjector, PaLIGemmaForConditionalGeneration._merge_input_ids_with_image_features/forward
Census: penguinwu/oss-model-graph-break-corpus lists PaliGemmaModel with logging.Logger (current version);
this is the file's early port of the same merge step.
Kept: the merge function verbatim (both padding sides), forward's merge/cached-generation/loss blocks and
the tuple return.
Simplified: the SigLIP vision tower and the Gemma language model (AutoModel.from_config) are small stand-ins
with the same call shapes (last_hidden_state; logits first in a tuple); sizes shrunk.
"""
from typing import Optional

import torch
from torch import nn


class VisionConfig:
    hidden_size = 8
    projection_dim = 8


class PaLIGemmaConfig:
    vision_config = VisionConfig()
    hidden_size = 8
    vocab_size = 16
    pad_token_id = 0
    ignore_index = -100
    image_token_index = 15
    output_attentions = False
    output_hidden_states = False
    use_return_dict = False


class VisionOutput:
    def __init__(self, last_hidden_state):
        self.last_hidden_state = last_hidden_state


class VisionTowerStandIn(nn.Module):
    """Stand-in for the SigLIP vision tower: patchify + linear, returns an object with last_hidden_state."""

    def __init__(self, config):
        super().__init__()
        self.patch = nn.Conv2d(3, config.hidden_size, kernel_size=4, stride=4)

    def forward(self, pixel_values):
        out = self.patch(pixel_values).flatten(2).transpose(1, 2)
        return VisionOutput(last_hidden_state=out)


class LanguageModelStandIn(nn.Module):
    """Stand-in for the Gemma causal LM: embeddings + norm + head, logits first in the returned tuple."""

    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                use_cache=None, output_attentions=None, output_hidden_states=None, return_dict=None):
        hidden = self.norm(inputs_embeds) * attention_mask[:, -inputs_embeds.shape[1]:, None]
        return (self.lm_head(hidden), past_key_values)


class PaLIGemmaMultiModalProjector(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.linear = nn.Linear(config.vision_config.hidden_size, config.vision_config.projection_dim, bias=True)

    def forward(self, image_features):
        hidden_states = self.linear(image_features)

        return hidden_states


class PaLIGemmaForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.vision_tower = VisionTowerStandIn(config.vision_config)
        self.multi_modal_projector = PaLIGemmaMultiModalProjector(config)
        self.vocab_size = config.vocab_size
        self.language_model = LanguageModelStandIn(config)
        self.pad_token_id = self.config.pad_token_id if self.config.pad_token_id is not None else -1

    def get_input_embeddings(self):
        return self.language_model.get_input_embeddings()

    def _merge_input_ids_with_image_features(self, image_features, inputs_embeds, input_ids, attention_mask, labels):
        _, num_image_tokens, embed_dim = image_features.shape
        batch_size, sequence_length = input_ids.shape

        left_padding = attention_mask[:, 0].sum() == 0

        full_sequence_length = num_image_tokens + sequence_length

        final_embedding = torch.zeros(batch_size, full_sequence_length, embed_dim, dtype=inputs_embeds.dtype, device=inputs_embeds.device)
        final_attention_mask = torch.zeros(batch_size, full_sequence_length, dtype=attention_mask.dtype, device=inputs_embeds.device)
        if labels is not None:
            final_labels = torch.full((batch_size, full_sequence_length), self.config.ignore_index, dtype=input_ids.dtype, device=input_ids.device)
        else:
            final_labels = None

        if left_padding:
            for i in range(batch_size):
                text_tokens_mask = attention_mask[i] > 0
                num_text_tokens = text_tokens_mask.sum().item()
                text_embeds = inputs_embeds[i][text_tokens_mask]

                start_text_idx = full_sequence_length - num_text_tokens
                start_image_idx = start_text_idx - num_image_tokens

                final_embedding[i, start_image_idx:start_text_idx] = image_features[i] / (self.config.hidden_size ** 0.5)
                final_embedding[i, start_text_idx:start_text_idx + num_text_tokens] = text_embeds
                final_attention_mask[i, start_image_idx:start_text_idx + num_text_tokens] = 1
        else:
            for i in range(batch_size):
                text_tokens_mask = attention_mask[i] > 0
                num_text_tokens = text_tokens_mask.sum().item()
                text_embeds = inputs_embeds[i][text_tokens_mask]

                final_embedding[i, :num_image_tokens] = image_features[i] / (self.config.hidden_size ** 0.5)
                final_embedding[i, num_image_tokens:num_image_tokens + num_text_tokens] = text_embeds
                final_attention_mask[i, :num_image_tokens + num_text_tokens] = 1
        position_ids = torch.arange(full_sequence_length, device=inputs_embeds.device).expand(batch_size, -1)
        return final_embedding, final_attention_mask, final_labels, position_ids

    def forward(
        self,
        input_ids: torch.LongTensor = None,
        pixel_values: torch.FloatTensor = None,
        attention_mask: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.LongTensor] = None,
        past_key_values=None,
        inputs_embeds: Optional[torch.FloatTensor] = None,
        labels: Optional[torch.LongTensor] = None,
        use_cache: Optional[bool] = None,
        output_attentions: Optional[bool] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
    ):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        if inputs_embeds is None:
            # 1. Extra the input embeddings
            inputs_embeds = self.get_input_embeddings()(input_ids)

            # 2. Merge text and images
            if pixel_values is not None and input_ids.shape[1] != 1:
                image_outputs = self.vision_tower(pixel_values)
                selected_image_feature = image_outputs.last_hidden_state
                image_features = self.multi_modal_projector(selected_image_feature)
                inputs_embeds, attention_mask, labels, position_ids = self._merge_input_ids_with_image_features(
                    image_features, inputs_embeds, input_ids, attention_mask, labels
                )
                if labels is None:
                    labels = torch.full_like(attention_mask, self.config.ignore_index).to(torch.long)
            else:
                # In case input_ids.shape[1] == 1 & pixel_values==None & past_key_values != None, we are in the case of
                # generation with cache
                if past_key_values is not None and pixel_values is not None and input_ids.shape[1] == 1:
                    # Retrieve the first layer to inspect the logits and mask out the hidden states
                    # that are set to 0
                    first_layer_past_key_value = past_key_values[0][0][:, :, :, 0]

                    # Sum all dimensions of head_dim (-2) to avoid random errors
                    batch_index, non_attended_tokens = torch.where(first_layer_past_key_value.float().sum(-2) == 0)

                    # Get the target length
                    target_seqlen = first_layer_past_key_value.shape[-1] + 1

                    extended_attention_mask = torch.ones(
                        (attention_mask.shape[0], target_seqlen - attention_mask.shape[1]),
                        dtype=attention_mask.dtype,
                        device=attention_mask.device,
                    )

                    # Filter out only the tokens that can be un-attended
                    valid_indices = non_attended_tokens < extended_attention_mask.size(-1)
                    new_batch_index = batch_index[valid_indices]
                    new_non_attended_tokens = non_attended_tokens[valid_indices]

                    # Zero-out the places where we don't need to attend
                    extended_attention_mask[new_batch_index, new_non_attended_tokens] = 0

                    attention_mask = torch.cat((attention_mask, extended_attention_mask), dim=1)
                    position_ids = torch.sum(attention_mask, dim=1).unsqueeze(-1) - 1

        outputs = self.language_model(
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=return_dict,
        )
        # we do not pass labels so output[0] correspond to logits
        logits = outputs[0]
        loss = None
        if labels is not None:
            # Shift so that tokens < n predict n
            if attention_mask is not None:
                shift_attention_mask = attention_mask[..., 1:]
                shift_logits = logits[..., :-1, :][shift_attention_mask.to(logits.device) != 0].contiguous()
                shift_labels = labels[..., 1:][shift_attention_mask.to(labels.device) != 0].contiguous()
            else:
                shift_logits = logits[..., :-1, :].contiguous()
                shift_labels = labels[..., 1:].contiguous()
            # Flatten the tokens
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(
                shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1).to(shift_logits.device)
            )

        output = (logits,) + outputs[1:]
        return (loss,) + output if loss is not None else output


model = torch.compile(PaLIGemmaForConditionalGeneration(PaLIGemmaConfig()).eval())


def make():
    torch.manual_seed(0)
    pixels = torch.randn(2, 3, 8, 8)  # 4 image tokens
    ids = torch.tensor([[3, 4, 5, 6, 7], [0, 0, 8, 9, 10]])
    right = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    left = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    labels = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 10, -100, -100]])
    key = torch.randn(2, 1, 12, 2)
    key[1, :, 1, :] = 0.0  # a position the cache never attended
    past = ((key, key.clone()),)
    step_ids = torch.tensor([[11], [12]])
    step_mask = torch.ones(2, 9, dtype=torch.long)
    return PaLIGemmaForConditionalGeneration(PaLIGemmaConfig()).eval(), [
        (ids, pixels, right, None, None, None, labels),
        (ids, pixels, left),
        (step_ids, pixels, step_mask, None, past),
    ]
