"""diffusers CrossAttnDownBlock2D: `cross_attention_kwargs["scale"]` triggers logger.warning, then the resnet/attention loop.

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/unets/unet_2d_blocks.py:1239-1291
Kept: the cross_attention_kwargs scale deprecation warning, the zip of
resnets and attentions, the gradient-checkpointing switch on
torch.is_grad_enabled(), additional_residuals on the last block, output_states
tuple accumulation and the downsamplers.
Simplified: resnet/attention are linear layers on flattened tokens; 2 blocks.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class CrossAttnDownBlock2D(nn.Module):
    def __init__(self, channels=4, num_layers=2):
        super().__init__()
        self.resnets = nn.ModuleList([nn.Conv2d(channels, channels, 3, padding=1) for _ in range(num_layers)])
        self.attentions = nn.ModuleList([nn.Linear(channels, channels) for _ in range(num_layers)])
        self.downsamplers = nn.ModuleList([nn.Conv2d(channels, channels, 3, stride=2, padding=1)])
        self.gradient_checkpointing = False

    def forward(self, hidden_states, temb=None, encoder_hidden_states=None, attention_mask=None, cross_attention_kwargs=None, encoder_attention_mask=None, additional_residuals=None):
        if cross_attention_kwargs is not None:
            if cross_attention_kwargs.get("scale", None) is not None:
                logger.warning("Passing `scale` to `cross_attention_kwargs` is deprecated. `scale` will be ignored.")
        output_states = ()
        blocks = list(zip(self.resnets, self.attentions))
        for i, (resnet, attn) in enumerate(blocks):
            if torch.is_grad_enabled() and self.gradient_checkpointing:
                raise NotImplementedError
            else:
                hidden_states = resnet(hidden_states)
                hidden_states = hidden_states + attn(hidden_states.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            if i == len(blocks) - 1 and additional_residuals is not None:
                hidden_states = hidden_states + additional_residuals
            output_states = output_states + (hidden_states,)
        if self.downsamplers is not None:
            for downsampler in self.downsamplers:
                hidden_states = downsampler(hidden_states)
            output_states = output_states + (hidden_states,)
        return hidden_states, output_states


down_block = torch.compile(CrossAttnDownBlock2D())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 4, 4)
    return CrossAttnDownBlock2D(), [(x,), (x, None, None, None, {"scale": 0.5})]
