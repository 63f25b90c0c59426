"""I-BERT `QuantAct` in training: NaN asserts on `x_max.isnan().sum() == 0`, an EMA-initialisation branch on
`self.x_min.min() > -1.1e-5 and self.x_max.max() < 1.1e-5`, and buffer reassignment `self.x_min = ...`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/ibert/quant_modules.py:113-195
Census: penguinwu/oss-model-graph-break-corpus identify/explain results: IBertModel has 0 breaks in eval and 19
in train (train-only breaks).
Kept: QuantAct.__init__ buffers (x_min/x_max offset by 1e-5), forward's training block verbatim (two
asserts, the tensor-valued `if`, the momentum `elif`/`else` updates) and the `quant_mode` early return.
Simplified: quant_mode=False (the default), so the fixed-point quantization functions are not reached.
"""
import torch
from torch import nn


class QuantAct(nn.Module):
    def __init__(self, activation_bit, act_range_momentum=0.95, per_channel=False, channel_len=None, quant_mode=False):
        super().__init__()
        self.activation_bit = activation_bit
        self.act_range_momentum = act_range_momentum
        self.quant_mode = quant_mode
        self.per_channel = per_channel
        self.percentile = False
        if not self.per_channel:
            self.x_min = nn.Buffer(torch.zeros(1))
            self.x_max = nn.Buffer(torch.zeros(1))
            self.act_scaling_factor = nn.Buffer(torch.zeros(1))
            self.x_min -= 1e-5
            self.x_max += 1e-5
        else:
            raise NotImplementedError("per-channel mode is not currently supported for activation.")

    def forward(self, x, pre_act_scaling_factor=None, identity=None, identity_scaling_factor=None,
                specified_min=None, specified_max=None):
        x_act = x if identity is None else identity + x
        # collect running stats if training
        if self.training:
            assert not self.percentile, "percentile mode is not currently supported for activation."
            assert not self.per_channel, "per-channel mode is not currently supported for activation."
            x_min = x_act.data.min()
            x_max = x_act.data.max()

            assert x_max.isnan().sum() == 0 and x_min.isnan().sum() == 0, (
                "NaN detected when computing min/max of the activation"
            )

            # Initialization
            if self.x_min.min() > -1.1e-5 and self.x_max.max() < 1.1e-5:
                self.x_min = self.x_min + x_min
                self.x_max = self.x_max + x_max

            # exponential moving average (EMA)
            # use momentum to prevent the quantized values change greatly every iteration
            elif self.act_range_momentum == -1:
                self.x_min = torch.min(self.x_min, x_min)
                self.x_max = torch.max(self.x_max, x_max)
            else:
                self.x_min = self.x_min * self.act_range_momentum + x_min * (1 - self.act_range_momentum)
                self.x_max = self.x_max * self.act_range_momentum + x_max * (1 - self.act_range_momentum)

        if not self.quant_mode:
            return x_act, None
        raise NotImplementedError("quant_mode=True is not part of this translation")


class IBertEmbeddingsStub(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(10, 4)
        self.embeddings_act1 = QuantAct(8, quant_mode=False)

    def forward(self, input_ids):
        embeds = self.word_embeddings(input_ids)
        embeds, _ = self.embeddings_act1(embeds)
        return embeds


def train_step(model, ids):
    model.train()
    compiled = torch.compile(model)
    compiled(ids).sum().backward()


def make():
    torch.manual_seed(0)
    return IBertEmbeddingsStub().train(), [(torch.tensor([[1, 2, 3]]),), (torch.tensor([[4, 5, 6]]),)]
