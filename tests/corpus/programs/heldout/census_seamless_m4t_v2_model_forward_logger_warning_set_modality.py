"""SeamlessM4Tv2Model.forward: `logger.warning` per modality, `set_modality` string state, speech sub-sampled mask.

Source: huggingface/transformers@000513e6ac52423dd6fe684019e482fe85b5aaf1:src/transformers/models/seamless_m4t_v2/modeling_seamless_m4t_v2.py:4000-4120
(census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10/explain_results.json, SeamlessM4Tv2Model:
eval/train break at the forward's `logger.warning(` ("logging.Logger methods are not supported"),
train also at the encoder/decoder `if dropout_probability < self.layerdrop:`).
Kept: SeamlessM4Tv2Model.forward's control flow as written (config defaults, labels -> use_cache warning
and shift_tokens_right, the input checks and three `logger.warning` calls, `set_modality`, speech vs
text encoder, `_compute_sub_sample_lengths_from_attention_mask` + `_compute_new_attention_mask`,
text decoder, lm_head, masked LM loss, tuple return), the encoders'/decoder's `torch.rand([])` layerdrop.
Simplified: each encoder/decoder is an embedding (or feature projection + strided conv adaptor) and
a small stack of pre-norm attention layers; tiny sizes; no generation, t2u model or vocoder.
"""
import logging

import torch
from torch import nn
from torch.nn import CrossEntropyLoss

logger = logging.getLogger("transformers.models.seamless_m4t_v2")


class SeamlessM4Tv2Config:
    vocab_size = 30
    hidden_size = 16
    feature_projection_input_dim = 10
    num_heads = 2
    encoder_layers = 2
    decoder_layers = 2
    encoder_layerdrop = 0.2
    decoder_layerdrop = 0.2
    adaptor_kernel_size = 4
    adaptor_stride = 2
    pad_token_id = 0
    decoder_start_token_id = 2
    output_attentions = False
    output_hidden_states = False
    use_cache = True
    use_return_dict = False


def shift_tokens_right(input_ids, pad_token_id, decoder_start_token_id):
    shifted_input_ids = input_ids.new_zeros(input_ids.shape)
    shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
    shifted_input_ids[:, 0] = decoder_start_token_id

    if pad_token_id is None:
        raise ValueError("self.model.config.pad_token_id has to be defined.")
    shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)
    return shifted_input_ids


def _compute_new_attention_mask(hidden_states, seq_lens):
    batch_size, mask_seq_len = hidden_states.shape[:2]

    indices = torch.arange(mask_seq_len, device=seq_lens.device).expand(batch_size, -1)

    bool_mask = indices >= seq_lens.unsqueeze(1).expand(-1, mask_seq_len)

    mask = hidden_states.new_ones((batch_size, mask_seq_len))

    mask = mask.masked_fill(bool_mask, 0)

    return mask


def _expand_mask(mask, dtype, tgt_len):
    bsz, src_len = mask.size()
    expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


class Layer(nn.Module):
    def __init__(self, config, cross=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(config.hidden_size, config.num_heads, batch_first=True)
        self.norm1 = nn.LayerNorm(config.hidden_size)
        self.cross_attn = (
            nn.MultiheadAttention(config.hidden_size, config.num_heads, batch_first=True) if cross else None
        )
        self.norm2 = nn.LayerNorm(config.hidden_size)
        self.ffn = nn.Sequential(nn.Linear(config.hidden_size, 32), nn.ReLU(), nn.Linear(32, config.hidden_size))
        self.norm3 = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        h = self.norm1(hidden_states)
        mask = None if attention_mask is None else attention_mask.repeat_interleave(self.self_attn.num_heads, 0)
        hidden_states = hidden_states + self.self_attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        if self.cross_attn is not None:
            h = self.norm2(hidden_states)
            cmask = None
            if encoder_attention_mask is not None:
                cmask = encoder_attention_mask.repeat_interleave(self.cross_attn.num_heads, 0)
            hidden_states = hidden_states + self.cross_attn(
                h, encoder_hidden_states, encoder_hidden_states, attn_mask=cmask, need_weights=False
            )[0]
        hidden_states = hidden_states + self.ffn(self.norm3(hidden_states))
        return (hidden_states,)


class SeamlessM4Tv2Encoder(nn.Module):
    def __init__(self, config, embed_tokens):
        super().__init__()
        self.layerdrop = config.encoder_layerdrop
        self.embed_tokens = embed_tokens
        self.layers = nn.ModuleList([Layer(config) for _ in range(config.encoder_layers)])
        self.layer_norm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        hidden_states = inputs_embeds
        if attention_mask is not None:
            attention_mask = _expand_mask(attention_mask, inputs_embeds.dtype, inputs_embeds.shape[1]).squeeze(1)
        for idx, encoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://arxiv.org/abs/1909.11556 for description)
            to_drop = False
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:  # skip the layer
                    to_drop = True

            if to_drop:
                layer_outputs = (None, None)
            else:
                layer_outputs = encoder_layer(hidden_states, attention_mask)
                hidden_states = layer_outputs[0]
        hidden_states = self.layer_norm(hidden_states)
        return (hidden_states,)


class SeamlessM4Tv2SpeechEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.feature_projection = nn.Linear(config.feature_projection_input_dim, config.hidden_size)
        self.encoder = nn.ModuleList([Layer(config) for _ in range(1)])
        self.adaptor = nn.Conv1d(
            config.hidden_size,
            config.hidden_size,
            config.adaptor_kernel_size,
            stride=config.adaptor_stride,
            padding=config.adaptor_kernel_size // 2,
        )
        self.inner_layer_norm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_features, attention_mask=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        hidden_states = self.feature_projection(input_features)
        mask = None
        if attention_mask is not None:
            mask = _expand_mask(attention_mask, hidden_states.dtype, hidden_states.shape[1]).squeeze(1)
        for layer in self.encoder:
            hidden_states = layer(hidden_states, mask)[0]
        hidden_states = self.adaptor(hidden_states.transpose(1, 2)).transpose(1, 2)
        hidden_states = self.inner_layer_norm(hidden_states)
        return (hidden_states,)


class SeamlessM4Tv2Decoder(nn.Module):
    def __init__(self, config, embed_tokens):
        super().__init__()
        self.layerdrop = config.decoder_layerdrop
        self.embed_tokens = embed_tokens
        self.layers = nn.ModuleList([Layer(config, cross=True) for _ in range(config.decoder_layers)])
        self.layer_norm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids=None, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None,
                past_key_values=None, inputs_embeds=None, use_cache=None, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        tgt_len = inputs_embeds.shape[1]
        causal = torch.triu(torch.full((tgt_len, tgt_len), torch.finfo(inputs_embeds.dtype).min), diagonal=1)
        causal = causal[None].expand(inputs_embeds.shape[0], -1, -1)
        if encoder_attention_mask is not None:
            encoder_attention_mask = _expand_mask(encoder_attention_mask, inputs_embeds.dtype, tgt_len).squeeze(1)
        hidden_states = inputs_embeds
        for idx, decoder_layer in enumerate(self.layers):
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue
            layer_outputs = decoder_layer(
                hidden_states,
                attention_mask=causal,
                encoder_hidden_states=encoder_hidden_states,
                encoder_attention_mask=encoder_attention_mask,
            )
            hidden_states = layer_outputs[0]
        hidden_states = self.layer_norm(hidden_states)
        return (hidden_states, None)


class SeamlessM4Tv2Model(nn.Module):
    main_input_name = "input_ids"

    def __init__(self, config, current_modality="text"):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)

        self.text_encoder = SeamlessM4Tv2Encoder(config, self.shared)
        self.speech_encoder = SeamlessM4Tv2SpeechEncoder(config)
        self.text_decoder = SeamlessM4Tv2Decoder(config, self.shared)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

        self.current_modality = current_modality
        if current_modality == "speech":
            self.main_input_name = "input_features"

    def set_modality(self, modality="text"):
        if modality == "text":
            self.main_input_name = "input_ids"
            self.current_modality = "text"
        elif modality == "speech":
            self.main_input_name = "input_features"
            self.current_modality = "speech"
        else:
            raise ValueError(f"`modality={modality}` is not a valid modality. It must be `text` or `speech`.")

    def _compute_sub_sample_lengths_from_attention_mask(self, attention_mask):
        pad = self.config.adaptor_kernel_size // 2
        seq_lens = attention_mask.size(1) - (1 - attention_mask.int()).sum(1)

        seq_lens = ((seq_lens + 2 * pad - self.config.adaptor_kernel_size) / self.config.adaptor_stride) + 1

        return seq_lens.floor()

    def forward(
        self,
        input_ids=None,
        input_features=None,
        attention_mask=None,
        decoder_input_ids=None,
        decoder_attention_mask=None,
        encoder_outputs=None,
        past_key_values=None,
        inputs_embeds=None,
        decoder_inputs_embeds=None,
        labels=None,
        use_cache=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        **kwargs,
    ):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        if labels is not None:
            if use_cache:
                logger.warning("The `use_cache` argument is changed to `False` since `labels` is provided.")
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = shift_tokens_right(
                    labels, self.config.pad_token_id, self.config.decoder_start_token_id
                )

        if input_ids is None and input_features is None and inputs_embeds is None and encoder_outputs is None:
            raise ValueError(
                "`input_ids`,`input_features`, `inputs_embeds` and `encoder_outputs` are all empty. Make sure at least one of them is not."
            )
        elif input_features is not None:
            if input_ids is not None:
                logger.warning(
                    "`input_ids` is not `None` but `input_features` has been given."
                    "`input_features` will be used in priority through the `speech_encoder`. "
                    "Make sure that `input_features` and `input_ids` are mutually exclusive."
                )

            if inputs_embeds is not None:
                logger.warning(
                    "`inputs_embeds` is not `None` but `input_features` has been given."
                    "`input_features` will be used in priority through `speech_encoder`. "
                    "`inputs_embeds` will be ignored."
                )

            # if encoder_outputs is not None, it's probably used within a .generate method so no need to warn
            logger.warning(
                "This calls the same method `forward` as `SeamlessM4Tv2ForTextToText` and `SeamlessM4Tv2ForSpeechToText`"
                "depending on the input modality. If you want to generate speech, use the `generate` method."
            )

            self.set_modality("speech")

            encoder_outputs = self.speech_encoder(
                input_features=input_features,
                attention_mask=attention_mask,
                output_attentions=output_attentions,
                output_hidden_states=output_hidden_states,
                return_dict=return_dict,
            )

        elif input_ids is not None or inputs_embeds is not None:
            # if encoder_outputs is not None, it's probably used within a .generate method so no need to warn
            logger.warning(
                "This calls the same method `forward` as `SeamlessM4Tv2ForTextToText` and `SeamlessM4Tv2ForSpeechToText`"
                "depending on the input modality. If you want to generate speech, use the `generate` method."
            )
            self.set_modality("text")
            encoder_outputs = self.text_encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                inputs_embeds=inputs_embeds,
                output_attentions=output_attentions,
                output_hidden_states=output_hidden_states,
                return_dict=return_dict,
            )

        encoder_attention_mask = attention_mask
        # input modality = speech so new attention mask
        if self.current_modality == "speech" and attention_mask is not None:
            sub_sampled_lengths = self._compute_sub_sample_lengths_from_attention_mask(attention_mask).to(
                encoder_outputs[0].device
            )
            encoder_attention_mask = _compute_new_attention_mask(
                hidden_states=encoder_outputs[0], seq_lens=sub_sampled_lengths
            )

        # decoder outputs consists of (dec_features, past_key_values, dec_hidden, dec_attn)
        decoder_outputs = self.text_decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            encoder_hidden_states=encoder_outputs[0],
            encoder_attention_mask=encoder_attention_mask,
            past_key_values=past_key_values,
            inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=return_dict,
        )

        lm_logits = self.lm_head(decoder_outputs[0])

        masked_lm_loss = None
        if labels is not None:
            loss_fct = CrossEntropyLoss()
            labels = labels.to(lm_logits.device)
            masked_lm_loss = loss_fct(lm_logits.view(-1, self.config.vocab_size), labels.view(-1))

        outputs = decoder_outputs + encoder_outputs
        output = (lm_logits,) + outputs[1:]
        return ((masked_lm_loss,) + output) if masked_lm_loss is not None else output


model = torch.compile(SeamlessM4Tv2Model(SeamlessM4Tv2Config()).eval())


def make():
    torch.manual_seed(0)
    m = SeamlessM4Tv2Model(SeamlessM4Tv2Config()).eval()
    input_ids = torch.randint(3, 30, (2, 5))
    text_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    decoder_input_ids = torch.randint(3, 30, (2, 4))
    features = torch.randn(2, 8, 10)
    speech_mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])
    labels = torch.randint(3, 30, (2, 4))
    return m, [
        (input_ids, None, text_mask, decoder_input_ids),
        (None, features, speech_mask, decoder_input_ids),
        (None, features, None, None, None, None, None, None, None, labels),
    ]
