"""Mamba prepare_inputs_for_generation at v4.52.4: `if cache_position[0] > 0:` picks the decode slice.

Source: huggingface/transformers@v4.52.4:src/transformers/models/mamba/modeling_mamba.py:640-690
Kept: the use_cache / cache_position None ValueError, the tensor condition
`cache_position[0] > 0` that slices the last token and drops the mask, the
prefill branch widening cache_position to the conv kernel, the inputs_embeds
first-step switch, and the model_inputs dict.
Simplified: compiled as the per-step input preparation of a decode loop
(the model call follows it); conv kernel 4.
"""
import torch
from torch import nn


class MambaForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_kernel = 4
        self.embeddings = nn.Embedding(16, 4)
        self.lm_head = nn.Linear(4, 16)

    def prepare_inputs_for_generation(self, input_ids, inputs_embeds=None, use_cache=None, cache_params=None, cache_position=None, attention_mask=None, **kwargs):
        if use_cache:
            if cache_position is None:
                raise ValueError(
                    "`cache_position` should not be None as it should have been initialized in "
                    "`model.generate`, you are responsible for passing in a valid `cache_position` if "
                    "you are calling `prepare_inputs_for_generation` directly with `use_cache=True`"
                )
            if cache_position[0] > 0:
                input_ids = input_ids[:, -1].unsqueeze(-1)
                if attention_mask is not None:
                    attention_mask = None
            else:
                cache_position = torch.arange(0, self.conv_kernel, device=input_ids.device)
        if inputs_embeds is not None and cache_params is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids.contiguous()}
        model_inputs.update({"cache_params": cache_params, "use_cache": use_cache, "cache_position": cache_position, "attention_mask": attention_mask})
        return model_inputs

    def forward(self, input_ids, cache_position, attention_mask=None):
        model_inputs = self.prepare_inputs_for_generation(input_ids, use_cache=True, cache_position=cache_position, attention_mask=attention_mask)
        hidden = self.embeddings(model_inputs["input_ids"])
        return self.lm_head(hidden), model_inputs["cache_position"]


step = torch.compile(MambaForCausalLM())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2, 3]])
    return MambaForCausalLM(), [(ids, torch.tensor([0]), torch.ones(1, 3)), (ids, torch.tensor([3]), torch.ones(1, 3))]
