"""I-BERT `QuantAct` in eval mode: the running-range block sits under `if self.training:` (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/ibert/quant_modules.py:113-195
Census: penguinwu/oss-model-graph-break-corpus: IBertModel eval has 0 breaks (train has 19).
Kept: QuantAct.forward's training block and quant_mode early return.
Simplified: quant_mode=False; the training block is present but not taken.
"""
import torch
from torch import nn


class QuantAct(nn.Module):
    def __init__(self, activation_bit, act_range_momentum=0.95, quant_mode=False):
        super().__init__()
        self.activation_bit = activation_bit
        self.act_range_momentum = act_range_momentum
        self.quant_mode = quant_mode
        self.x_min = nn.Buffer(torch.zeros(1) - 1e-5)
        self.x_max = nn.Buffer(torch.zeros(1) + 1e-5)

    def forward(self, x, identity=None):
        x_act = x if identity is None else identity + x
        if self.training:
            x_min = x_act.data.min()
            x_max = x_act.data.max()
            assert x_max.isnan().sum() == 0 and x_min.isnan().sum() == 0, (
                "NaN detected when computing min/max of the activation"
            )
            if self.x_min.min() > -1.1e-5 and self.x_max.max() < 1.1e-5:
                self.x_min = self.x_min + x_min
                self.x_max = self.x_max + x_max
            else:
                self.x_min = self.x_min * self.act_range_momentum + x_min * (1 - self.act_range_momentum)
                self.x_max = self.x_max * self.act_range_momentum + x_max * (1 - self.act_range_momentum)
        if not self.quant_mode:
            return x_act, None
        raise NotImplementedError


class IBertLayerStub(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(4, 4)
        self.output_act = QuantAct(8)

    def forward(self, hidden_states):
        out, _ = self.output_act(self.dense(hidden_states), identity=hidden_states)
        return out


layer = torch.compile(IBertLayerStub().eval())


def make():
    torch.manual_seed(0)
    return IBertLayerStub().eval(), [(torch.randn(2, 4),)]
