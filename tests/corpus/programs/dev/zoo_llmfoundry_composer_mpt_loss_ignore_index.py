"""llm-foundry's ComposerMPTCausalLM loss: `compute_loss_from_logits` shifts the labels with `get_targets` and branches on `torch.all(targets == loss_fn.ignore_index)` before normalising by the count of real targets.

Source: mosaicml/llm-foundry@8c8dd48f72168c5d51e2f7b151595892a8fba43d:llmfoundry/models/mpt/modeling_mpt.py:1426-1560
Also: the same file's MPTForCausalLM.forward (logit_scale warning, final_logit_softcapping,
the CausalLMOutputWithPast return) and CROSS_ENTROPY_IGNORE_INDEX.
Kept: get_targets, compute_loss_from_logits, ComposerMPTCausalLM.__init__'s
loss_fn_config switch (torch_crossentropy with reduction='none'),
forward(batch) with its batch.get plumbing and loss(outputs, batch) with the
shift_labels attribute; MPTForCausalLM.forward's logits post-processing.
Simplified: the transformer under MPTForCausalLM is an embedding + LayerNorm
returning `last_hidden_state` (the real MPTModel is elsewhere in the corpus),
so forward passes it only the arguments it reads;
no MegaBlocks, metrics or tokenizer; CausalLMOutputWithPast is a local
dataclass; the compiled entry is the usual custom loop step
`loss = model.loss(model(batch), batch)`; vocab 12, d_model 8.
"""
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, MutableMapping, Optional, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

CROSS_ENTROPY_IGNORE_INDEX = -100


@dataclass
class BaseModelOutputWithPast:
    last_hidden_state: torch.Tensor
    past_key_values: Optional[Tuple] = None
    hidden_states: Optional[Tuple] = None
    attentions: Optional[Tuple] = None


@dataclass
class CausalLMOutputWithPast:
    loss: Optional[torch.Tensor] = None
    logits: Optional[torch.Tensor] = None
    past_key_values: Optional[Tuple] = None
    hidden_states: Optional[Tuple] = None
    attentions: Optional[Tuple] = None


class MPTConfig:
    def __init__(self, d_model=8, vocab_size=12, logit_scale=None, final_logit_softcapping=None,
                 return_dict=True, use_cache=False, **kwargs: Any):
        self.d_model = d_model
        self.vocab_size = vocab_size
        self.logit_scale = logit_scale
        self.final_logit_softcapping = final_logit_softcapping
        self.return_dict = return_dict
        self.use_cache = use_cache
        self.ffn_config = {'ffn_type': 'mptmlp'}


class TinyMPTModel(nn.Module):
    def __init__(self, config: MPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.d_model)
        self.norm_f = nn.LayerNorm(config.d_model)
        self.shift_labels = True

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, sequence_id=None,
                return_dict=None, output_attentions=None, output_hidden_states=None,
                use_cache=None, inputs_embeds=None, position_ids=None):
        x = self.wte(input_ids) if inputs_embeds is None else inputs_embeds
        if attention_mask is not None:
            x = x * attention_mask.unsqueeze(-1).to(x.dtype)
        return BaseModelOutputWithPast(last_hidden_state=self.norm_f(x))


class MPTForCausalLM(nn.Module):
    def __init__(self, config: MPTConfig):
        super().__init__()
        self.config = config
        self.transformer = TinyMPTModel(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.logit_scale = config.logit_scale
        self.final_logit_softcapping = config.final_logit_softcapping

    def forward(
        self,
        input_ids: Optional[torch.LongTensor] = None,
        attention_mask: Optional[torch.ByteTensor] = None,
        labels: Optional[torch.LongTensor] = None,
        inputs_embeds: Optional[torch.FloatTensor] = None,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        outputs = self.transformer(
            input_ids=input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
        )

        logits = self.lm_head(outputs.last_hidden_state)

        if self.logit_scale is not None:
            if self.logit_scale == 0:
                warnings.warn(
                    f'Multiplying logits by {self.logit_scale=}. This will produce uniform (uninformative) outputs.',
                )
            logits *= self.logit_scale

        if self.final_logit_softcapping is not None:
            logits = self.final_logit_softcapping * torch.tanh(
                logits / self.final_logit_softcapping,
            )

        loss = None
        if labels is not None:
            _labels = torch.roll(labels, shifts=-1)
            _labels[:, -1] = CROSS_ENTROPY_IGNORE_INDEX
            loss = F.cross_entropy(
                logits.view(-1, logits.size(-1)),
                _labels.to(logits.device).view(-1),
            )

        return CausalLMOutputWithPast(
            loss=loss,  # type: ignore
            logits=logits,  # type: ignore
            past_key_values=outputs.past_key_values,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )


def get_targets(labels: torch.Tensor) -> torch.Tensor:
    targets = torch.roll(labels, shifts=-1)
    targets[:, -1] = CROSS_ENTROPY_IGNORE_INDEX
    return targets


def compute_loss_from_logits(
    outputs: CausalLMOutputWithPast,
    shift_labels: bool,
    labels: torch.Tensor,
    loss_fn: nn.Module,
) -> torch.Tensor:
    targets = get_targets(labels) if shift_labels else labels

    losses = loss_fn(
        outputs.logits.view(-1, outputs.logits.size(-1)),  # type: ignore
        targets.view(-1),
    )

    if torch.all(targets == loss_fn.ignore_index):  # type: ignore
        loss = losses.sum()
    else:
        loss = losses.sum() / (targets
                               != loss_fn.ignore_index).sum()  # type: ignore

    return loss


class ComposerMPTCausalLM(nn.Module):
    def __init__(self, loss_fn: Optional[Union[str, dict]] = 'torch_crossentropy', **kwargs):
        super().__init__()
        self.model = MPTForCausalLM(MPTConfig(**kwargs))
        self.shift_labels = self.model.transformer.shift_labels

        loss_fn_config = loss_fn
        if loss_fn_config == 'torch_crossentropy':
            self.loss_fn = nn.CrossEntropyLoss(
                ignore_index=CROSS_ENTROPY_IGNORE_INDEX,
                reduction='none',
            )
        else:
            raise ValueError(
                f'Specified loss_fn={loss_fn_config} not recognized. `loss_fn` must be `torch_crossentropy` here.',
            )

    def get_targets(self, batch: Mapping) -> torch.Tensor:
        return get_targets(batch['labels'])

    def forward(self, batch: MutableMapping) -> CausalLMOutputWithPast:
        return self.model(
            input_ids=batch.get('input_ids', None),
            attention_mask=batch.get('attention_mask', None),
            sequence_id=batch.get('sequence_id', None),
            inputs_embeds=batch.get('inputs_embeds', None),
            position_ids=batch.get('position_ids', None),
        )

    def loss(self, outputs: CausalLMOutputWithPast,
             batch: Mapping) -> Union[dict, torch.Tensor]:
        loss = compute_loss_from_logits(
            outputs,
            self.shift_labels,
            batch['labels'],
            self.loss_fn,
        )
        return loss


composer_model = ComposerMPTCausalLM(loss_fn='torch_crossentropy', logit_scale=0.5)


def train_microbatch(batch):
    outputs = composer_model(batch)
    return composer_model.loss(outputs, batch)


compiled_step = torch.compile(train_microbatch)


def make():
    torch.manual_seed(0)
    global composer_model
    composer_model = ComposerMPTCausalLM(loss_fn='torch_crossentropy', logit_scale=0.5)
    input_ids = torch.randint(0, 12, (2, 5))
    labels = input_ids.clone()
    labels[1, :2] = CROSS_ENTROPY_IGNORE_INDEX
    all_ignored = torch.full((2, 5), CROSS_ENTROPY_IGNORE_INDEX)
    return train_microbatch, [
        ({'input_ids': input_ids, 'labels': labels, 'attention_mask': torch.ones(2, 5)},),
        ({'input_ids': input_ids, 'labels': all_ignored},),
    ]
