"""HuBERT feature encoder sets `hidden_states.requires_grad = True` on a non-leaf view in training.

Source: huggingface/transformers@v5.23.0:src/transformers/models/hubert/modeling_hubert.py:180-215
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): HubertModel train,
`modeling_hubert.py:208 hidden_states.requires_grad = True` (Tensor requires_grad mutation).
Kept: the `_requires_grad` flag, `_freeze_parameters`, the `self._requires_grad and self.training` gate,
the conv stack loop.
Simplified: two Conv1d+GELU layers with group-norm free convs; tiny kernel sizes.
"""
import torch
from torch import nn


class HubertConfig:
    conv_dim = (8, 8)
    conv_kernel = (4, 3)
    conv_stride = (2, 2)


class HubertNoLayerNormConvLayer(nn.Module):
    def __init__(self, config, layer_id=0):
        super().__init__()
        in_dim = config.conv_dim[layer_id - 1] if layer_id > 0 else 1
        self.conv = nn.Conv1d(in_dim, config.conv_dim[layer_id], config.conv_kernel[layer_id],
                              stride=config.conv_stride[layer_id], bias=False)
        self.activation = nn.GELU()

    def forward(self, hidden_states):
        return self.activation(self.conv(hidden_states))


class HubertFeatureEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.conv_layers = nn.ModuleList([HubertNoLayerNormConvLayer(config, layer_id=i) for i in range(2)])
        self.gradient_checkpointing = False
        self._requires_grad = True

    def _freeze_parameters(self):
        for param in self.parameters():
            param.requires_grad = False
        self._requires_grad = False

    def forward(self, input_values):
        hidden_states = input_values[:, None]

        # make sure hidden_states require grad for gradient_checkpointing
        if self._requires_grad and self.training:
            hidden_states.requires_grad = True

        for conv_layer in self.conv_layers:
            hidden_states = conv_layer(hidden_states)

        return hidden_states


encoder = HubertFeatureEncoder(HubertConfig())
encoder.train()
encoder.compile()


def make():
    torch.manual_seed(0)
    return HubertFeatureEncoder(HubertConfig()).train(), [(torch.randn(2, 40),)]
