"""CRNN text recogniser: conv features squeezed to a `[w, b, c]` sequence and two BidirectionalLSTM layers, each running `nn.LSTM` and a Linear through `utils.data_parallel`, which checks `isinstance(input.data, torch.cuda.FloatTensor) and ngpu > 1`.

Source: meijieru/crnn.pytorch@1cd71dffce8545efa7c559ed40358496e270e724:models/crnn.py:5-82
Also: models/utils.py (data_parallel; checked against indexed copies of that
file, the stored snapshot lacks it).
Kept: BidirectionalLSTM and CRNN verbatim (convRelu closure building the CNN,
the `assert h == 1` check, the permute to time-major), `utils.data_parallel`
reached as a module attribute.
Simplified: `utils` is a local namespace class instead of the models/utils
module; channel widths are divided by 16 (nm = 4..32), nh = 8, 5 classes,
32x32 grey images; compiled in eval mode as demo.py runs it.
"""
import torch
import torch.nn as nn
import torch.nn.parallel


class utils:
    @staticmethod
    def data_parallel(model, input, ngpu):
        if isinstance(input.data, torch.cuda.FloatTensor) and ngpu > 1:
            output = nn.parallel.data_parallel(model, input, range(ngpu))
        else:
            output = model(input)
        return output


class BidirectionalLSTM(nn.Module):

    def __init__(self, nIn, nHidden, nOut, ngpu):
        super(BidirectionalLSTM, self).__init__()
        self.ngpu = ngpu

        self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
        self.embedding = nn.Linear(nHidden * 2, nOut)

    def forward(self, input):
        recurrent, _ = utils.data_parallel(
            self.rnn, input, self.ngpu)  # [T, b, h * 2]

        T, b, h = recurrent.size()
        t_rec = recurrent.view(T * b, h)
        output = utils.data_parallel(
            self.embedding, t_rec, self.ngpu)  # [T * b, nOut]
        output = output.view(T, b, -1)

        return output


class CRNN(nn.Module):

    def __init__(self, imgH, nc, nclass, nh, ngpu, n_rnn=2, leakyRelu=False):
        super(CRNN, self).__init__()
        self.ngpu = ngpu
        assert imgH % 16 == 0, 'imgH has to be a multiple of 16'

        ks = [3, 3, 3, 3, 3, 3, 2]
        ps = [1, 1, 1, 1, 1, 1, 0]
        ss = [1, 1, 1, 1, 1, 1, 1]
        nm = [4, 8, 16, 16, 32, 32, 32]

        cnn = nn.Sequential()

        def convRelu(i, batchNormalization=False):
            nIn = nc if i == 0 else nm[i - 1]
            nOut = nm[i]
            cnn.add_module('conv{0}'.format(i),
                           nn.Conv2d(nIn, nOut, ks[i], ss[i], ps[i]))
            if batchNormalization:
                cnn.add_module('batchnorm{0}'.format(i), nn.BatchNorm2d(nOut))
            if leakyRelu:
                cnn.add_module('relu{0}'.format(i),
                               nn.LeakyReLU(0.2, inplace=True))
            else:
                cnn.add_module('relu{0}'.format(i), nn.ReLU(True))

        convRelu(0)
        cnn.add_module('pooling{0}'.format(0), nn.MaxPool2d(2, 2))  # 64x16x64
        convRelu(1)
        cnn.add_module('pooling{0}'.format(1), nn.MaxPool2d(2, 2))  # 128x8x32
        convRelu(2, True)
        convRelu(3)
        cnn.add_module('pooling{0}'.format(2), nn.MaxPool2d((2, 2),
                                                            (2, 1),
                                                            (0, 1)))  # 256x4x16
        convRelu(4, True)
        convRelu(5)
        cnn.add_module('pooling{0}'.format(3), nn.MaxPool2d((2, 2),
                                                            (2, 1),
                                                            (0, 1)))  # 512x2x16
        convRelu(6, True)  # 512x1x16

        self.cnn = cnn
        self.rnn = nn.Sequential(
            BidirectionalLSTM(32, nh, nh, ngpu),
            BidirectionalLSTM(nh, nh, nclass, ngpu)
        )

    def forward(self, input):
        # conv features
        conv = utils.data_parallel(self.cnn, input, self.ngpu)
        b, c, h, w = conv.size()
        assert h == 1, "the height of conv must be 1"
        conv = conv.squeeze(2)
        conv = conv.permute(2, 0, 1)  # [w, b, c]

        # rnn features
        output = utils.data_parallel(self.rnn, conv, self.ngpu)

        return output


def make():
    torch.manual_seed(0)
    image = torch.randn(2, 1, 32, 32)
    return CRNN(32, 1, 5, 8, 1).eval(), [(image,)]


def main():
    model = CRNN(32, 1, 5, 8, 1)
    model.eval()
    return torch.compile(model)
