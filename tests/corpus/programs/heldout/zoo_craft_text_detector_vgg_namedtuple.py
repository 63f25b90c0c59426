"""CRAFT scene-text detector: a VGG16-BN backbone split into slices whose forward builds a `namedtuple("VggOutputs", ...)` class on every call, then a U-net of double_conv blocks upsampled with `F.interpolate(size=sources[i].size()[2:])`, returning the permuted region/affinity map and the feature map.

Source: clovaai/CRAFT-pytorch@60fbdb08d701907756aa85324691350c74dc830b:craft.py:13-80
Also: basenet/vgg16_bn.py@bd9c293597516b63458166baf17c52651154effb (init_weights, vgg16_bn),
test.py@e08622d157ced91896b500a073c8e9c302e663b0 (net.eval() and `y, _ = net(x)` in test_net),
torchvision models/vgg.py (make_layers for cfg "D" with batch_norm, which vgg16_bn slices).
Kept: double_conv, CRAFT and vgg16_bn verbatim (slice index ranges, the freeze loop,
the per-call namedtuple, the tuple return), init_weights verbatim.
Simplified: torchvision's `models.vgg16_bn(pretrained).features` is rebuilt locally with
torchvision's make_layers and every width divided by 16 (64..512 -> 4..32, fc6/fc7
1024 -> 64, U-net 256/128/64/32 -> 16/8/4/2 and the head 32/16 -> 2/2); no weights
are loaded; one 64x64 image.
"""
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init


def init_weights(modules):
    for m in modules:
        if isinstance(m, nn.Conv2d):
            init.xavier_uniform_(m.weight.data)
            if m.bias is not None:
                m.bias.data.zero_()
        elif isinstance(m, nn.BatchNorm2d):
            m.weight.data.fill_(1)
            m.bias.data.zero_()
        elif isinstance(m, nn.Linear):
            m.weight.data.normal_(0, 0.01)
            m.bias.data.zero_()


class models:
    # torchvision.models.vgg: make_layers(cfgs["D"], batch_norm=True), widths / 16
    @staticmethod
    def vgg16_bn(pretrained=False):
        cfg = [4, 4, "M", 8, 8, "M", 16, 16, 16, "M", 32, 32, 32, "M", 32, 32, 32, "M"]
        layers = []
        in_channels = 3
        for v in cfg:
            if v == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
                layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                in_channels = v
        vgg = nn.Module()
        vgg.features = nn.Sequential(*layers)
        return vgg


class vgg16_bn(torch.nn.Module):
    def __init__(self, pretrained=True, freeze=True):
        super(vgg16_bn, self).__init__()
        vgg_pretrained_features = models.vgg16_bn(pretrained=pretrained).features
        self.slice1 = torch.nn.Sequential()
        self.slice2 = torch.nn.Sequential()
        self.slice3 = torch.nn.Sequential()
        self.slice4 = torch.nn.Sequential()
        self.slice5 = torch.nn.Sequential()
        for x in range(12):         # conv2_2
            self.slice1.add_module(str(x), vgg_pretrained_features[x])
        for x in range(12, 19):         # conv3_3
            self.slice2.add_module(str(x), vgg_pretrained_features[x])
        for x in range(19, 29):         # conv4_3
            self.slice3.add_module(str(x), vgg_pretrained_features[x])
        for x in range(29, 39):         # conv5_3
            self.slice4.add_module(str(x), vgg_pretrained_features[x])

        # fc6, fc7 without atrous conv
        self.slice5 = torch.nn.Sequential(
                nn.MaxPool2d(kernel_size=3, stride=1, padding=1),
                nn.Conv2d(32, 64, kernel_size=3, padding=6, dilation=6),
                nn.Conv2d(64, 64, kernel_size=1)
        )

        if not pretrained:
            init_weights(self.slice1.modules())
            init_weights(self.slice2.modules())
            init_weights(self.slice3.modules())
            init_weights(self.slice4.modules())

        init_weights(self.slice5.modules())        # no pretrained model for fc6 and fc7

        if freeze:
            for param in self.slice1.parameters():      # only first conv
                param.requires_grad= False

    def forward(self, X):
        h = self.slice1(X)
        h_relu2_2 = h
        h = self.slice2(h)
        h_relu3_2 = h
        h = self.slice3(h)
        h_relu4_3 = h
        h = self.slice4(h)
        h_relu5_3 = h
        h = self.slice5(h)
        h_fc7 = h
        vgg_outputs = namedtuple("VggOutputs", ['fc7', 'relu5_3', 'relu4_3', 'relu3_2', 'relu2_2'])
        out = vgg_outputs(h_fc7, h_relu5_3, h_relu4_3, h_relu3_2, h_relu2_2)
        return out


class double_conv(nn.Module):
    def __init__(self, in_ch, mid_ch, out_ch):
        super(double_conv, self).__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_ch + mid_ch, mid_ch, kernel_size=1),
            nn.BatchNorm2d(mid_ch),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_ch, out_ch, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_ch),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        x = self.conv(x)
        return x


class CRAFT(nn.Module):
    def __init__(self, pretrained=False, freeze=False):
        super(CRAFT, self).__init__()

        """ Base network """
        self.basenet = vgg16_bn(pretrained, freeze)

        """ U network """
        self.upconv1 = double_conv(64, 32, 16)
        self.upconv2 = double_conv(32, 16, 8)
        self.upconv3 = double_conv(16, 8, 4)
        self.upconv4 = double_conv(8, 4, 2)

        num_class = 2
        self.conv_cls = nn.Sequential(
            nn.Conv2d(2, 2, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(2, 2, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(2, 2, kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(2, 2, kernel_size=1), nn.ReLU(inplace=True),
            nn.Conv2d(2, num_class, kernel_size=1),
        )

        init_weights(self.upconv1.modules())
        init_weights(self.upconv2.modules())
        init_weights(self.upconv3.modules())
        init_weights(self.upconv4.modules())
        init_weights(self.conv_cls.modules())

    def forward(self, x):
        """ Base network """
        sources = self.basenet(x)

        """ U network """
        y = torch.cat([sources[0], sources[1]], dim=1)
        y = self.upconv1(y)

        y = F.interpolate(y, size=sources[2].size()[2:], mode='bilinear', align_corners=False)
        y = torch.cat([y, sources[2]], dim=1)
        y = self.upconv2(y)

        y = F.interpolate(y, size=sources[3].size()[2:], mode='bilinear', align_corners=False)
        y = torch.cat([y, sources[3]], dim=1)
        y = self.upconv3(y)

        y = F.interpolate(y, size=sources[4].size()[2:], mode='bilinear', align_corners=False)
        y = torch.cat([y, sources[4]], dim=1)
        feature = self.upconv4(y)

        y = self.conv_cls(feature)

        return y.permute(0,2,3,1), feature

    def unload(self):
        del self


def load_net():
    net = CRAFT()     # initialize
    net.eval()
    return torch.compile(net)


def make():
    torch.manual_seed(0)
    net = CRAFT().eval()
    x = torch.randn(1, 3, 64, 64)
    return net, [(x,)]
