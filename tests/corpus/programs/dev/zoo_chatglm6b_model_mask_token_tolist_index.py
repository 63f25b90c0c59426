"""ChatGLM-6B (v1) ChatGLMModel.forward: `MASK in input_ids`, `input_ids[0].tolist()` and list.index() build the prefix mask and 2D position ids.

Source: mymusise/ChatGLM-Tuning@8cf2d07e49:modeling_chatglm.py:770-1010
Kept: ChatGLMModel's config plumbing, the static get_masks(seq, device),
get_position_ids(seq, mask_position, device, gmask) with position_encoding_2d,
forward() verbatim around them (input_ids/inputs_embeds ValueErrors,
`mask_token = MASK if MASK in input_ids else gMASK`, `use_gmask`,
`seq = input_ids[0].tolist()`, `seq.index(...)`, the [seq, batch, hidden]
transpose, per-layer `layer_id=torch.tensor(i)`, presents / hidden-state
tuples), and ChatGLMForConditionalGeneration.forward's shifted LM loss, the
way ChatGLM-Tuning fine-tunes it.
Simplified: GLMBlock is a stand-in with the same call signature (LayerNorm,
single-head masked attention with learned 2D position embeddings instead of
the 2D rotary, GELU MLP, the (2 * num_layers) ** 0.5 residual scaling);
fp32 instead of half, no skip_init; hidden size 8, 2 layers; the vocabulary
keeps the real special-token ids (150000/150001/150004).
"""
from typing import Optional, Tuple

import torch
from torch import nn
from torch.nn import CrossEntropyLoss, LayerNorm


class ChatGLMConfig:
    vocab_size = 150008
    hidden_size = 8
    num_layers = 2
    num_attention_heads = 1
    layernorm_epsilon = 1e-5
    inner_hidden_size = 16
    max_sequence_length = 32
    position_encoding_2d = True
    use_cache = False
    output_attentions = False
    output_hidden_states = False
    use_return_dict = False


class GLMBlock(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, layernorm_epsilon, layer_id, inner_hidden_size=None,
                 hidden_size_per_attention_head=None, layernorm=LayerNorm, use_bias=True, params_dtype=torch.float,
                 num_layers=2, position_encoding_2d=True, max_sequence_length=32):
        super().__init__()
        self.layer_id = layer_id
        self.input_layernorm = layernorm(hidden_size, eps=layernorm_epsilon)
        self.position_embeddings = nn.Embedding(max_sequence_length, hidden_size)
        self.block_position_embeddings = nn.Embedding(max_sequence_length, hidden_size)
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size, bias=use_bias)
        self.dense = nn.Linear(hidden_size, hidden_size, bias=use_bias)
        self.post_attention_layernorm = layernorm(hidden_size, eps=layernorm_epsilon)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, inner_hidden_size), nn.GELU(), nn.Linear(inner_hidden_size, hidden_size))
        self.num_layers = num_layers

    def forward(self, hidden_states, position_ids, attention_mask, layer_id, layer_past=None, use_cache=False,
                output_attentions=False):
        attention_input = self.input_layernorm(hidden_states)
        pos = self.position_embeddings(position_ids[:, 0]) + self.block_position_embeddings(position_ids[:, 1])
        q, k, v = self.query_key_value(attention_input + pos.transpose(0, 1)).chunk(3, dim=-1)
        scores = torch.einsum("sbh,tbh->bst", q, k) / (q.size(-1) ** 0.5 * (layer_id.float() + 1))
        scores = scores.unsqueeze(1).masked_fill(attention_mask, -10000.0)
        probs = torch.softmax(scores, dim=-1).squeeze(1)
        context = torch.einsum("bst,tbh->sbh", probs, v)
        attention_output = self.dense(context)
        alpha = (2 * self.num_layers) ** 0.5
        hidden_states = attention_input * alpha + attention_output
        mlp_input = self.post_attention_layernorm(hidden_states)
        mlp_output = self.mlp(mlp_input)
        output = mlp_input * alpha + mlp_output
        if use_cache:
            outputs = (output, (k, v))
        else:
            outputs = (output,)
        if output_attentions:
            outputs = outputs + (probs,)
        return outputs


class ChatGLMModel(nn.Module):
    def __init__(self, config: ChatGLMConfig):
        super().__init__()
        self.config = config

        self.max_sequence_length = config.max_sequence_length
        self.hidden_size = config.hidden_size
        self.params_dtype = torch.float
        self.num_attention_heads = config.num_attention_heads
        self.vocab_size = config.vocab_size
        self.num_layers = config.num_layers
        self.layernorm_epsilon = config.layernorm_epsilon
        self.inner_hidden_size = config.inner_hidden_size
        self.hidden_size_per_attention_head = self.hidden_size // self.num_attention_heads
        self.position_encoding_2d = config.position_encoding_2d
        self.model_parallel = True

        self.word_embeddings = torch.nn.Embedding(
            num_embeddings=self.vocab_size, embedding_dim=self.hidden_size,
            dtype=self.params_dtype
        )

        def get_layer(layer_id):
            return GLMBlock(
                self.hidden_size,
                self.num_attention_heads,
                self.layernorm_epsilon,
                layer_id,
                inner_hidden_size=self.inner_hidden_size,
                hidden_size_per_attention_head=self.hidden_size_per_attention_head,
                layernorm=LayerNorm,
                use_bias=True,
                params_dtype=self.params_dtype,
                num_layers=self.num_layers,
                position_encoding_2d=self.position_encoding_2d,
                max_sequence_length=self.max_sequence_length,
            )

        self.layers = torch.nn.ModuleList(
            [get_layer(layer_id) for layer_id in range(self.num_layers)]
        )

        self.final_layernorm = LayerNorm(self.hidden_size, eps=self.layernorm_epsilon)

    @staticmethod
    def get_masks(seq, device):
        context_length = seq.index(150004) + 1

        attention_mask = torch.ones((1, len(seq), len(seq)), device=device)
        attention_mask.tril_()
        attention_mask[..., :context_length - 1] = 1
        attention_mask.unsqueeze_(1)
        attention_mask = (attention_mask < 0.5).bool()

        return attention_mask

    def get_position_ids(self, seq, mask_position, device, gmask=False):
        context_length = len(seq)
        if self.position_encoding_2d:
            seq_length = seq.index(150004)
            position_ids = torch.arange(context_length, dtype=torch.long, device=device)
            if not gmask:
                position_ids[seq_length:] = mask_position
            block_position_ids = torch.cat((
                torch.zeros(seq_length, dtype=torch.long, device=device),
                torch.arange(context_length - seq_length, dtype=torch.long, device=device) + 1
            ))
            position_ids = torch.stack((position_ids, block_position_ids), dim=0)
        else:
            position_ids = torch.arange(context_length, dtype=torch.long, device=device)
            if not gmask:
                position_ids[context_length - 1:] = mask_position

        position_ids = position_ids.unsqueeze(0)

        return position_ids

    def forward(
            self,
            input_ids: Optional[torch.LongTensor] = None,
            position_ids: Optional[torch.LongTensor] = None,
            attention_mask: Optional[torch.Tensor] = None,
            past_key_values: Optional[Tuple[Tuple[torch.Tensor, torch.Tensor], ...]] = None,
            inputs_embeds: Optional[torch.LongTensor] = None,
            use_cache: Optional[bool] = None,
            output_attentions: Optional[bool] = None,
            output_hidden_states: Optional[bool] = None,
            return_dict: Optional[bool] = None,
    ):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("You cannot specify both input_ids and inputs_embeds at the same time")
        elif input_ids is not None:
            batch_size, seq_length = input_ids.shape[:2]
        elif inputs_embeds is not None:
            batch_size, seq_length, _ = inputs_embeds.shape[:2]
        else:
            raise ValueError("You have to specify either input_ids or inputs_embeds")

        if past_key_values is None:
            past_key_values = tuple([None] * len(self.layers))

            MASK, gMASK = 150000, 150001
            mask_token = MASK if MASK in input_ids else gMASK
            use_gmask = False if MASK in input_ids else gMASK
            seq = input_ids[0].tolist()

            mask_position = seq.index(mask_token)

            if attention_mask is None:
                attention_mask = self.get_masks(
                    seq=seq,
                    device=input_ids.device
                )

            if position_ids is None:
                position_ids = self.get_position_ids(
                    seq=seq,
                    mask_position=mask_position,
                    device=input_ids.device,
                    gmask=use_gmask
                )

        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)

        hidden_states = inputs_embeds.transpose(0, 1)

        presents = () if use_cache else None
        all_self_attentions = () if output_attentions else None
        all_hidden_states = () if output_hidden_states else None

        seq_length_with_past = seq_length
        past_key_values_length = 0
        if past_key_values[0] is not None:
            past_key_values_length = past_key_values[0][0].shape[0]
            seq_length_with_past = seq_length_with_past + past_key_values_length
        if attention_mask is None:
            attention_mask = torch.zeros(1, 1, device=input_ids.device).bool()

        else:
            attention_mask = attention_mask.to(input_ids.device)

        for i, layer in enumerate(self.layers):

            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)

            layer_ret = layer(
                hidden_states,
                position_ids=position_ids,
                attention_mask=attention_mask,
                layer_id=torch.tensor(i),
                layer_past=past_key_values[i],
                use_cache=use_cache,
                output_attentions=output_attentions
            )

            hidden_states = layer_ret[0]

            if use_cache:
                presents = presents + (layer_ret[1],)

            if output_attentions:
                all_self_attentions = all_self_attentions + (layer_ret[2 if use_cache else 1],)

        hidden_states = self.final_layernorm(hidden_states)

        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)

        return tuple(v for v in [hidden_states, presents, all_hidden_states, all_self_attentions] if v is not None)


class ChatGLMForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.max_sequence_length = config.max_sequence_length
        self.position_encoding_2d = config.position_encoding_2d
        self.transformer = ChatGLMModel(config)
        self.lm_head = nn.Linear(config.hidden_size, 16, bias=False)

    def forward(
            self,
            input_ids: Optional[torch.Tensor] = None,
            position_ids: Optional[torch.Tensor] = None,
            attention_mask: Optional[torch.Tensor] = None,
            past_key_values: Optional[Tuple[torch.FloatTensor]] = None,
            inputs_embeds: Optional[torch.Tensor] = None,
            labels: Optional[torch.Tensor] = None,
            use_cache: Optional[bool] = None,
            output_attentions: Optional[bool] = None,
            output_hidden_states: Optional[bool] = None,
            return_dict: Optional[bool] = None,
    ):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        transformer_outputs = self.transformer(
            input_ids=input_ids,
            position_ids=position_ids,
            attention_mask=attention_mask,
            past_key_values=past_key_values,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=return_dict,
        )

        hidden_states = transformer_outputs[0]

        lm_logits = self.lm_head(hidden_states).permute(1, 0, 2).contiguous()

        loss = None
        if labels is not None:
            lm_logits = lm_logits.to(torch.float32)

            shift_logits = lm_logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss_fct = CrossEntropyLoss()
            loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))

            lm_logits = lm_logits.to(hidden_states.dtype)
            loss = loss.to(hidden_states.dtype)

        output = (lm_logits,) + transformer_outputs[1:]
        return ((loss,) + output) if loss is not None else output


def train():
    model = ChatGLMForConditionalGeneration(ChatGLMConfig())
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = ChatGLMForConditionalGeneration(ChatGLMConfig())
    mask_ids = torch.tensor([[5, 6, 150000, 7, 150004, 9, 10]])
    gmask_ids = torch.tensor([[5, 6, 7, 150001, 150004, 9]])
    labels = torch.tensor([[-100, -100, -100, -100, 3, 4, 5]])
    return model, [
        (mask_ids, None, None, None, None, labels),
        (gmask_ids,),
    ]
