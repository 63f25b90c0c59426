"""RAD-TTS LengthRegulator: each text frame is expanded `int(dur[i] + 0.5)` times in a Python loop, per utterance, then the utterances are padded to the longest and stacked.

Source: NVIDIA/radtts@07759cd474458f46db45cab975a85ba21b7fee0a:common.py:178-206
Kept: LengthRegulator unchanged (forward's zip over batch, expand's
enumerate over frames with int(dur[i] + 0.5) and frame.expand, pad's
max over sizes and F.pad to max_len, torch.stack).
Simplified: the surrounding RADTTS.infer is not included; the regulator is
compiled on its own (`torch.compile(LengthRegulator())`). Batch 2, 3 text
frames, 4 channels.
"""
import torch
from torch import nn
from torch.nn import functional as F


class LengthRegulator(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, dur):
        output = []
        for x_i, dur_i in zip(x, dur):
            expanded = self.expand(x_i, dur_i)
            output.append(expanded)
        output = self.pad(output)
        return output

    def expand(self, x, dur):
        output = []
        for i, frame in enumerate(x):
            expanded_len = int(dur[i] + 0.5)
            expanded = frame.expand(expanded_len, -1)
            output.append(expanded)
        output = torch.cat(output, 0)
        return output

    def pad(self, x):
        output = []
        max_len = max([x[i].size(0) for i in range(len(x))])
        for i, seq in enumerate(x):
            padded = F.pad(
                seq, [0, 0, 0, max_len - seq.size(0)], 'constant', 0.0)
            output.append(padded)
        output = torch.stack(output)
        return output


length_regulator = torch.compile(LengthRegulator())


def make():
    torch.manual_seed(0)
    txt_enc = torch.randn(2, 3, 4)
    dur = torch.tensor([[1.2, 2.6, 0.7], [2.0, 1.4, 1.1]])
    return LengthRegulator(), [(txt_enc, dur)]
