"""DBNet text-detection model: an addict-style config picks backbone, FPN neck and DBHead by `type`; the FPN upsamples with `F.interpolate(size=y.size()[2:])`, the DBHead applies `weights_init` by class-name matching and, only when `self.training`, adds the differentiable-binarisation map `torch.reciprocal(1 + torch.exp(-self.k * (x - y)))`; the model resizes the head output back to the input size.

Source: WenmuZhou/DBNet.pytorch@3bfab706bb9574e1c703ff41d14c418826596e11:models/model.py:13-34
Also: models/head/DBHead.py@fa7a9d923364ed5d45a3c331c7655580010c9488 (DBHead, verbatim),
models/neck/FPN.py@fa7a9d92 (FPN, verbatim), models/modules/basic.py@442af7d7 (ConvBnRelu),
models/__init__.py / models/head/__init__.py (build_* by type name), tools/train.py
(model built from config['arch'], trained, then evaluated in eval mode).
Kept: Model.__init__ with `model_config.backbone.pop('type')` plumbing and forward,
FPN, ConvBnRelu and DBHead verbatim.
Simplified: addict.Dict is a small attribute-access dict subclass; the ResNet backbone
is replaced by four strided ConvBnRelu stages exposing `out_channels` (4/8/16/32
channels at strides 4..32); FPN inner_channels 16; the build_* helpers are dict
lookups; 2 images of 64x64. Compiled in eval mode as tools/predict.py runs it
(`model.eval()`); the training mode the trainer uses is measured too.
"""
import torch
import torch.nn.functional as F
from torch import nn


class Dict(dict):
    # addict.Dict: attribute access, nested dicts converted
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for k, v in list(self.items()):
            if isinstance(v, dict) and not isinstance(v, Dict):
                self[k] = Dict(v)

    def __getattr__(self, item):
        return self[item]


class ConvBnRelu(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode='zeros', inplace=True):
        super().__init__()
        self.conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                              groups=groups, bias=bias, padding_mode=padding_mode)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=inplace)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = self.relu(x)
        return x


class TinyBackbone(nn.Module):
    def __init__(self, in_channels=3, pretrained=False):
        super().__init__()
        self.stem = ConvBnRelu(in_channels, 4, kernel_size=3, stride=4, padding=1)
        self.layer2 = ConvBnRelu(4, 8, kernel_size=3, stride=2, padding=1)
        self.layer3 = ConvBnRelu(8, 16, kernel_size=3, stride=2, padding=1)
        self.layer4 = ConvBnRelu(16, 32, kernel_size=3, stride=2, padding=1)
        self.out_channels = [4, 8, 16, 32]

    def forward(self, x):
        c2 = self.stem(x)
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        return c2, c3, c4, c5


class FPN(nn.Module):
    def __init__(self, in_channels, inner_channels=256, **kwargs):
        """
        :param in_channels: 基础网络输出的维度
        :param kwargs:
        """
        super().__init__()
        inplace = True
        self.conv_out = inner_channels
        inner_channels = inner_channels // 4
        # reduce layers
        self.reduce_conv_c2 = ConvBnRelu(in_channels[0], inner_channels, kernel_size=1, inplace=inplace)
        self.reduce_conv_c3 = ConvBnRelu(in_channels[1], inner_channels, kernel_size=1, inplace=inplace)
        self.reduce_conv_c4 = ConvBnRelu(in_channels[2], inner_channels, kernel_size=1, inplace=inplace)
        self.reduce_conv_c5 = ConvBnRelu(in_channels[3], inner_channels, kernel_size=1, inplace=inplace)
        # Smooth layers
        self.smooth_p4 = ConvBnRelu(inner_channels, inner_channels, kernel_size=3, padding=1, inplace=inplace)
        self.smooth_p3 = ConvBnRelu(inner_channels, inner_channels, kernel_size=3, padding=1, inplace=inplace)
        self.smooth_p2 = ConvBnRelu(inner_channels, inner_channels, kernel_size=3, padding=1, inplace=inplace)

        self.conv = nn.Sequential(
            nn.Conv2d(self.conv_out, self.conv_out, kernel_size=3, padding=1, stride=1),
            nn.BatchNorm2d(self.conv_out),
            nn.ReLU(inplace=inplace)
        )
        self.out_channels = self.conv_out

    def forward(self, x):
        c2, c3, c4, c5 = x
        # Top-down
        p5 = self.reduce_conv_c5(c5)
        p4 = self._upsample_add(p5, self.reduce_conv_c4(c4))
        p4 = self.smooth_p4(p4)
        p3 = self._upsample_add(p4, self.reduce_conv_c3(c3))
        p3 = self.smooth_p3(p3)
        p2 = self._upsample_add(p3, self.reduce_conv_c2(c2))
        p2 = self.smooth_p2(p2)

        x = self._upsample_cat(p2, p3, p4, p5)
        x = self.conv(x)
        return x

    def _upsample_add(self, x, y):
        return F.interpolate(x, size=y.size()[2:]) + y

    def _upsample_cat(self, p2, p3, p4, p5):
        h, w = p2.size()[2:]
        p3 = F.interpolate(p3, size=(h, w))
        p4 = F.interpolate(p4, size=(h, w))
        p5 = F.interpolate(p5, size=(h, w))
        return torch.cat([p2, p3, p4, p5], dim=1)


class DBHead(nn.Module):
    def __init__(self, in_channels, out_channels, k = 50):
        super().__init__()
        self.k = k
        self.binarize = nn.Sequential(
            nn.Conv2d(in_channels, in_channels // 4, 3, padding=1),
            nn.BatchNorm2d(in_channels // 4),
            nn.ReLU(inplace=True),
            nn.ConvTranspose2d(in_channels // 4, in_channels // 4, 2, 2),
            nn.BatchNorm2d(in_channels // 4),
            nn.ReLU(inplace=True),
            nn.ConvTranspose2d(in_channels // 4, 1, 2, 2),
            nn.Sigmoid())
        self.binarize.apply(self.weights_init)

        self.thresh = self._init_thresh(in_channels)
        self.thresh.apply(self.weights_init)

    def forward(self, x):
        shrink_maps = self.binarize(x)
        threshold_maps = self.thresh(x)
        if self.training:
            binary_maps = self.step_function(shrink_maps, threshold_maps)
            y = torch.cat((shrink_maps, threshold_maps, binary_maps), dim=1)
        else:
            y = torch.cat((shrink_maps, threshold_maps), dim=1)
        return y

    def weights_init(self, m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            nn.init.kaiming_normal_(m.weight.data)
        elif classname.find('BatchNorm') != -1:
            m.weight.data.fill_(1.)
            m.bias.data.fill_(1e-4)

    def _init_thresh(self, inner_channels, serial=False, smooth=False, bias=False):
        in_channels = inner_channels
        if serial:
            in_channels += 1
        self.thresh = nn.Sequential(
            nn.Conv2d(in_channels, inner_channels // 4, 3, padding=1, bias=bias),
            nn.BatchNorm2d(inner_channels // 4),
            nn.ReLU(inplace=True),
            self._init_upsample(inner_channels // 4, inner_channels // 4, smooth=smooth, bias=bias),
            nn.BatchNorm2d(inner_channels // 4),
            nn.ReLU(inplace=True),
            self._init_upsample(inner_channels // 4, 1, smooth=smooth, bias=bias),
            nn.Sigmoid())
        return self.thresh

    def _init_upsample(self, in_channels, out_channels, smooth=False, bias=False):
        if smooth:
            inter_out_channels = out_channels
            if out_channels == 1:
                inter_out_channels = in_channels
            module_list = [
                nn.Upsample(scale_factor=2, mode='nearest'),
                nn.Conv2d(in_channels, inter_out_channels, 3, 1, 1, bias=bias)]
            if out_channels == 1:
                module_list.append(nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=1, bias=True))
            return nn.Sequential(module_list)
        else:
            return nn.ConvTranspose2d(in_channels, out_channels, 2, 2)

    def step_function(self, x, y):
        return torch.reciprocal(1 + torch.exp(-self.k * (x - y)))


_backbones = {'resnet18': TinyBackbone}
_necks = {'FPN': FPN}
_heads = {'DBHead': DBHead}


def build_backbone(backbone_name, **kwargs):
    return _backbones[backbone_name](**kwargs)


def build_neck(neck_name, **kwargs):
    return _necks[neck_name](**kwargs)


def build_head(head_name, **kwargs):
    return _heads[head_name](**kwargs)


class Model(nn.Module):
    def __init__(self, model_config: dict):
        """
        PANnet
        :param model_config: 模型配置
        """
        super().__init__()
        model_config = Dict(model_config)
        backbone_type = model_config.backbone.pop('type')
        neck_type = model_config.neck.pop('type')
        head_type = model_config.head.pop('type')
        self.backbone = build_backbone(backbone_type, **model_config.backbone)
        self.neck = build_neck(neck_type, in_channels=self.backbone.out_channels, **model_config.neck)
        self.head = build_head(head_type, in_channels=self.neck.out_channels, **model_config.head)
        self.name = f'{backbone_type}_{neck_type}_{head_type}'

    def forward(self, x):
        _, _, H, W = x.size()
        backbone_out = self.backbone(x)
        neck_out = self.neck(backbone_out)
        y = self.head(neck_out)
        y = F.interpolate(y, size=(H, W), mode='bilinear', align_corners=True)
        return y


def model_config():
    return {
        'backbone': {'type': 'resnet18', 'pretrained': False, "in_channels": 3},
        'neck': {'type': 'FPN', 'inner_channels': 16},
        'head': {'type': 'DBHead', 'out_channels': 2, 'k': 50},
    }


def build_model():
    model = Model(model_config=model_config())
    model.eval()
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = Model(model_config=model_config()).eval()
    x = torch.randn(2, 3, 64, 64)
    return model, [(x,)]
