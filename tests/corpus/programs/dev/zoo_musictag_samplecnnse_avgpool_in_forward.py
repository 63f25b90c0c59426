"""sota-music-tagging-models SampleCNNSE: raw-waveform ResSE_1d blocks that build `nn.AvgPool1d(out.size(-1))` inside forward for squeeze-and-excitation, a `self.diff` residual switch, and `nn.ReLU()(...)` / `nn.Sigmoid()(...)` instantiated in forward.

Source: minzwon/sota-music-tagging-models@3abe8be7e0620235edfd6f14a1175337c3775e0c:training/model.py (SampleCNNSE)
Also: training/modules.py (ResSE_1d) at 1676bf3ecbf5a8082030bfd38e91f11b87c5ffe6; training/solver.py
trains with `out = self.model(x)` on 59049-sample chunks.
Kept: ResSE_1d and SampleCNNSE verbatim: eleven blocks, strides and poolings, so the chunk is still
3**10 samples and the last block leaves length 1 for `x.squeeze(-1)`.
Simplified: channel widths 128/256/512 -> 4/8/16 and n_class 50 -> 10 (through a `width`
argument); torchaudio/librosa imports of modules.py dropped (unused by these classes).
"""
import torch
import torch.nn as nn


class ResSE_1d(nn.Module):
    def __init__(self, input_channels, output_channels, shape=3, stride=1, pooling=3):
        super(ResSE_1d, self).__init__()
        # convolution
        self.conv_1 = nn.Conv1d(input_channels, output_channels, shape, stride=stride, padding=shape//2)
        self.bn_1 = nn.BatchNorm1d(output_channels)
        self.conv_2 = nn.Conv1d(output_channels, output_channels, shape, padding=shape//2)
        self.bn_2 = nn.BatchNorm1d(output_channels)

        # squeeze & excitation
        self.dense1 = nn.Linear(output_channels, output_channels)
        self.dense2 = nn.Linear(output_channels, output_channels)

        # residual
        self.diff = False
        if (stride != 1) or (input_channels != output_channels):
            self.conv_3 = nn.Conv1d(input_channels, output_channels, shape, stride=stride, padding=shape//2)
            self.bn_3 = nn.BatchNorm1d(output_channels)
            self.diff = True
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()
        self.mp = nn.MaxPool1d(pooling)

    def forward(self, x):
        # convolution
        out = self.bn_2(self.conv_2(self.relu(self.bn_1(self.conv_1(x)))))

        # squeeze & excitation
        se_out = nn.AvgPool1d(out.size(-1))(out)
        se_out = se_out.squeeze(-1)
        se_out = self.relu(self.dense1(se_out))
        se_out = self.sigmoid(self.dense2(se_out))
        se_out = se_out.unsqueeze(-1)
        out = torch.mul(out, se_out)

        # residual
        if self.diff:
            x = self.bn_3(self.conv_3(x))
        out = x + out
        out = self.mp(self.relu(out))
        return out


class SampleCNNSE(nn.Module):
    '''
    Kim et al. 2018
    Sample-level CNN architectures for music auto-tagging using raw waveforms.
    Sample-level CNN + residual connections + squeeze & excitation.
    '''
    def __init__(self,
                 n_class=50, width=(128, 256, 512)):
        super(SampleCNNSE, self).__init__()
        c1, c2, c3 = width
        self.layer1 = ResSE_1d(1, c1, shape=3, stride=3, pooling=1)
        self.layer2 = ResSE_1d(c1, c1, shape=3, stride=1, pooling=3)
        self.layer3 = ResSE_1d(c1, c1, shape=3, stride=1, pooling=3)
        self.layer4 = ResSE_1d(c1, c2, shape=3, stride=1, pooling=3)
        self.layer5 = ResSE_1d(c2, c2, shape=3, stride=1, pooling=3)
        self.layer6 = ResSE_1d(c2, c2, shape=3, stride=1, pooling=3)
        self.layer7 = ResSE_1d(c2, c2, shape=3, stride=1, pooling=3)
        self.layer8 = ResSE_1d(c2, c2, shape=3, stride=1, pooling=3)
        self.layer9 = ResSE_1d(c2, c2, shape=3, stride=1, pooling=3)
        self.layer10 = ResSE_1d(c2, c3, shape=3, stride=1, pooling=3)
        self.layer11 = ResSE_1d(c3, c3, shape=1, stride=1, pooling=1)
        self.dropout = nn.Dropout(0.5)
        self.dense1 = nn.Linear(c3, c3)
        self.bn = nn.BatchNorm1d(c3)
        self.dense2 = nn.Linear(c3, n_class)

    def forward(self, x):
        x = x.unsqueeze(1)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.layer5(x)
        x = self.layer6(x)
        x = self.layer7(x)
        x = self.layer8(x)
        x = self.layer9(x)
        x = self.layer10(x)
        x = self.layer11(x)
        x = x.squeeze(-1)
        x = nn.ReLU()(self.bn(self.dense1(x)))
        x = self.dropout(x)
        x = self.dense2(x)
        x = nn.Sigmoid()(x)
        return x


def get_model():
    return SampleCNNSE(n_class=10, width=(4, 8, 16))


def build_solver():
    model = get_model()
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 59049) * 0.1
    return get_model(), [(x,), (torch.randn(2, 59049) * 0.1,)]
