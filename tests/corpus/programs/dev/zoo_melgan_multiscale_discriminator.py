"""MelGAN multi-scale discriminator: a ModuleDict of weight-normed NLayerDiscriminators iterated with `.items()`, average-pool downsampling between scales, every layer's feature map collected (no break).

Source: descriptinc/melgan-neurips@4677742ee46570ab55f9c041cea16a8d37f7c8de:mel2wav/modules.py:9-23,130-199
Kept: weights_init (class-name dispatch applied with `self.apply`), WNConv1d,
NLayerDiscriminator and Discriminator verbatim (ModuleDict keys built with "%d",
grouped strided convs, nested results lists).
Simplified: the Generator and Audio2Mel (librosa) are left out; the training defaults
(num_D=3, ndf=16, n_layers_D=4, downsamp_factor=4) are kept because the last layers
rely on the 1024-channel cap (`nf_prev == nf`); short inputs.
"""
import torch
import torch.nn as nn
from torch.nn.utils import weight_norm


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find("BatchNorm2d") != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


def WNConv1d(*args, **kwargs):
    return weight_norm(nn.Conv1d(*args, **kwargs))


class NLayerDiscriminator(nn.Module):
    def __init__(self, ndf, n_layers, downsampling_factor):
        super().__init__()
        model = nn.ModuleDict()

        model["layer_0"] = nn.Sequential(
            nn.ReflectionPad1d(7),
            WNConv1d(1, ndf, kernel_size=15),
            nn.LeakyReLU(0.2, True),
        )

        nf = ndf
        stride = downsampling_factor
        for n in range(1, n_layers + 1):
            nf_prev = nf
            nf = min(nf * stride, 1024)

            model["layer_%d" % n] = nn.Sequential(
                WNConv1d(
                    nf_prev,
                    nf,
                    kernel_size=stride * 10 + 1,
                    stride=stride,
                    padding=stride * 5,
                    groups=nf_prev // 4,
                ),
                nn.LeakyReLU(0.2, True),
            )

        nf = min(nf * 2, 1024)
        model["layer_%d" % (n_layers + 1)] = nn.Sequential(
            WNConv1d(nf_prev, nf, kernel_size=5, stride=1, padding=2),
            nn.LeakyReLU(0.2, True),
        )

        model["layer_%d" % (n_layers + 2)] = WNConv1d(
            nf, 1, kernel_size=3, stride=1, padding=1
        )

        self.model = model

    def forward(self, x):
        results = []
        for key, layer in self.model.items():
            x = layer(x)
            results.append(x)
        return results


class Discriminator(nn.Module):
    def __init__(self, num_D, ndf, n_layers, downsampling_factor):
        super().__init__()
        self.model = nn.ModuleDict()
        for i in range(num_D):
            self.model[f"disc_{i}"] = NLayerDiscriminator(
                ndf, n_layers, downsampling_factor
            )

        self.downsample = nn.AvgPool1d(4, stride=2, padding=1, count_include_pad=False)
        self.apply(weights_init)

    def forward(self, x):
        results = []
        for key, disc in self.model.items():
            results.append(disc(x))
            x = self.downsample(x)
        return results


def build_discriminator():
    # scripts/train.py: Discriminator(args.num_D, args.ndf, args.n_layers_D, args.downsamp_factor)
    return Discriminator(3, 16, 4, 4)


netD = build_discriminator()
netD.compile()


def make():
    torch.manual_seed(0)
    model = build_discriminator()
    x = torch.randn(2, 1, 256)
    return model, [(x,), (x[:1, :, :160],)]
