"""VITS WaveNet: `num_channels_tensor[0]` (a 0-d tensor) is used as a slice bound inside
`fused_add_tanh_sigmoid_multiply`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/vits/modeling_vits.py:84-89, 300-373
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): VitsModel eval+train,
`modeling_vits.py:87 t_act = torch.tanh(in_act[:, :num_channels, :])` (reported as `Tensor.item()`).
Kept: VitsWaveNet.forward (IntTensor of the hidden size, optional global conditioning, the residual/skip
split) and the fused activation helper.
Simplified: plain Conv1d layers (no weight_norm), 2 layers, hidden size 4.
"""
import torch
from torch import nn


def fused_add_tanh_sigmoid_multiply(input_a, input_b, num_channels):
    in_act = input_a + input_b
    t_act = torch.tanh(in_act[:, :num_channels, :])
    s_act = torch.sigmoid(in_act[:, num_channels:, :])
    acts = t_act * s_act
    return acts


class VitsWaveNet(nn.Module):
    def __init__(self, hidden_size=4, num_layers=2, speaker_embedding_size=0):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.in_layers = nn.ModuleList()
        self.res_skip_layers = nn.ModuleList()
        self.dropout = nn.Dropout(0.0)
        if speaker_embedding_size != 0:
            self.cond_layer = nn.Conv1d(speaker_embedding_size, 2 * hidden_size * num_layers, 1)
        for i in range(num_layers):
            self.in_layers.append(nn.Conv1d(hidden_size, 2 * hidden_size, 3, padding=1))
            res_skip_channels = 2 * hidden_size if i < num_layers - 1 else hidden_size
            self.res_skip_layers.append(nn.Conv1d(hidden_size, res_skip_channels, 1))

    def forward(self, inputs, padding_mask, global_conditioning=None):
        outputs = torch.zeros_like(inputs)
        num_channels_tensor = torch.IntTensor([self.hidden_size])

        if global_conditioning is not None:
            global_conditioning = self.cond_layer(global_conditioning)

        for i in range(self.num_layers):
            hidden_states = self.in_layers[i](inputs)

            if global_conditioning is not None:
                cond_offset = i * 2 * self.hidden_size
                global_states = global_conditioning[:, cond_offset : cond_offset + 2 * self.hidden_size, :]
            else:
                global_states = torch.zeros_like(hidden_states)

            acts = fused_add_tanh_sigmoid_multiply(hidden_states, global_states, num_channels_tensor[0])
            acts = self.dropout(acts)

            res_skip_acts = self.res_skip_layers[i](acts)
            if i < self.num_layers - 1:
                res_acts = res_skip_acts[:, : self.hidden_size, :]
                inputs = (inputs + res_acts) * padding_mask
                outputs = outputs + res_skip_acts[:, self.hidden_size :, :]
            else:
                outputs = outputs + res_skip_acts

        return outputs * padding_mask


wavenet = torch.compile(VitsWaveNet(speaker_embedding_size=3))


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 6)
    mask = torch.ones(1, 1, 6)
    return VitsWaveNet(speaker_embedding_size=3), [(x, mask), (x, mask, torch.randn(1, 3, 1))]
