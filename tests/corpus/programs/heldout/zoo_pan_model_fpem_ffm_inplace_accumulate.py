"""PAN model forward: backbone features -> FPEM_FFM head (stacked FPEMs whose outputs are accumulated in place, `c2_ffm += c2`), bilinear FFM fusion, final resize to the input size.

Source: WenmuZhou/PAN.pytorch@517e9eec3eeb629a9f346f2a80599b0e01e653ff:models/model.py:10-52
Kept: Model (backbone_dict / segmentation_head_dict lookups, the asserts, the
final interpolate) and models/modules/segmentation_head.py FPEM_FFM, FPEM and
SeparableConv2d verbatim.
Simplified: the torchvision-style resnet18 backbone (models/modules/resnet.py)
is replaced by a tiny 4-stage conv stand-in with the same
`resnet18(pretrained=...)` factory and (c2, c3, c4, c5) output; backbone_dict
keeps only that entry (out channels 8/16/24/32) and the FPN head is left out;
FPEM_FFM conv_out 16 instead of 128; Chinese comments dropped.
"""
import torch
from torch import nn
import torch.nn.functional as F


class _TinyResNet(nn.Module):
    def __init__(self, outs=(8, 16, 24, 32)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, outs[0], 3, 2, 1, bias=False), nn.BatchNorm2d(outs[0]), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        self.layer1 = nn.Sequential(nn.Conv2d(outs[0], outs[0], 3, 1, 1, bias=False), nn.BatchNorm2d(outs[0]), nn.ReLU(inplace=True))
        self.layer2 = nn.Sequential(nn.Conv2d(outs[0], outs[1], 3, 2, 1, bias=False), nn.BatchNorm2d(outs[1]), nn.ReLU(inplace=True))
        self.layer3 = nn.Sequential(nn.Conv2d(outs[1], outs[2], 3, 2, 1, bias=False), nn.BatchNorm2d(outs[2]), nn.ReLU(inplace=True))
        self.layer4 = nn.Sequential(nn.Conv2d(outs[2], outs[3], 3, 2, 1, bias=False), nn.BatchNorm2d(outs[3]), nn.ReLU(inplace=True))

    def forward(self, x):
        x = self.stem(x)
        c2 = self.layer1(x)
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        return c2, c3, c4, c5


def resnet18(pretrained=True, **kwargs):
    return _TinyResNet()


class FPEM_FFM(nn.Module):
    def __init__(self, backbone_out_channels, **kwargs):
        """
        PANnet
        :param backbone_out_channels: backbone output channels
        """
        super().__init__()
        fpem_repeat = kwargs.get('fpem_repeat', 2)
        conv_out = 16
        # reduce layers
        self.reduce_conv_c2 = nn.Sequential(
            nn.Conv2d(in_channels=backbone_out_channels[0], out_channels=conv_out, kernel_size=1),
            nn.BatchNorm2d(conv_out),
            nn.ReLU()
        )
        self.reduce_conv_c3 = nn.Sequential(
            nn.Conv2d(in_channels=backbone_out_channels[1], out_channels=conv_out, kernel_size=1),
            nn.BatchNorm2d(conv_out),
            nn.ReLU()
        )
        self.reduce_conv_c4 = nn.Sequential(
            nn.Conv2d(in_channels=backbone_out_channels[2], out_channels=conv_out, kernel_size=1),
            nn.BatchNorm2d(conv_out),
            nn.ReLU()
        )
        self.reduce_conv_c5 = nn.Sequential(
            nn.Conv2d(in_channels=backbone_out_channels[3], out_channels=conv_out, kernel_size=1),
            nn.BatchNorm2d(conv_out),
            nn.ReLU()
        )
        self.fpems = nn.ModuleList()
        for i in range(fpem_repeat):
            self.fpems.append(FPEM(conv_out))
        self.out_conv = nn.Conv2d(in_channels=conv_out * 4, out_channels=6, kernel_size=1)

    def forward(self, x):
        c2, c3, c4, c5 = x
        # reduce channel
        c2 = self.reduce_conv_c2(c2)
        c3 = self.reduce_conv_c3(c3)
        c4 = self.reduce_conv_c4(c4)
        c5 = self.reduce_conv_c5(c5)

        # FPEM
        for i, fpem in enumerate(self.fpems):
            c2, c3, c4, c5 = fpem(c2, c3, c4, c5)
            if i == 0:
                c2_ffm = c2
                c3_ffm = c3
                c4_ffm = c4
                c5_ffm = c5
            else:
                c2_ffm += c2
                c3_ffm += c3
                c4_ffm += c4
                c5_ffm += c5

        # FFM
        c5 = F.interpolate(c5_ffm, c2_ffm.size()[-2:], mode='bilinear')
        c4 = F.interpolate(c4_ffm, c2_ffm.size()[-2:], mode='bilinear')
        c3 = F.interpolate(c3_ffm, c2_ffm.size()[-2:], mode='bilinear')
        Fy = torch.cat([c2_ffm, c3, c4, c5], dim=1)
        y = self.out_conv(Fy)
        return y


class FPEM(nn.Module):
    def __init__(self, in_channels=128):
        super().__init__()
        self.up_add1 = SeparableConv2d(in_channels, in_channels, 1)
        self.up_add2 = SeparableConv2d(in_channels, in_channels, 1)
        self.up_add3 = SeparableConv2d(in_channels, in_channels, 1)
        self.down_add1 = SeparableConv2d(in_channels, in_channels, 2)
        self.down_add2 = SeparableConv2d(in_channels, in_channels, 2)
        self.down_add3 = SeparableConv2d(in_channels, in_channels, 2)

    def forward(self, c2, c3, c4, c5):

        c4 = self.up_add1(self._upsample_add(c5, c4))
        c3 = self.up_add2(self._upsample_add(c4, c3))
        c2 = self.up_add3(self._upsample_add(c3, c2))


        c3 = self.down_add1(self._upsample_add(c3, c2))
        c4 = self.down_add2(self._upsample_add(c4, c3))
        c5 = self.down_add3(self._upsample_add(c5, c4))
        return c2, c3, c4, c5

    def _upsample_add(self, x, y):
        return F.interpolate(x, size=y.size()[2:], mode='bilinear') + y


class SeparableConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        super(SeparableConv2d, self).__init__()

        self.depthwise_conv = nn.Conv2d(in_channels=in_channels, out_channels=in_channels, kernel_size=3, padding=1,
                                        stride=stride, groups=in_channels)
        self.pointwise_conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=1)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.depthwise_conv(x)
        x = self.pointwise_conv(x)
        x = self.bn(x)
        x = self.relu(x)
        return x


backbone_dict = {'resnet18': {'models': resnet18, 'out': [8, 16, 24, 32]}}

segmentation_head_dict = {'FPEM_FFM': FPEM_FFM}


class Model(nn.Module):
    def __init__(self, model_config: dict):
        """
        PANnet
        :param model_config: model config
        """
        super().__init__()
        backbone = model_config['backbone']
        pretrained = model_config['pretrained']
        segmentation_head = model_config['segmentation_head']

        assert backbone in backbone_dict, 'backbone must in: {}'.format(backbone_dict)
        assert segmentation_head in segmentation_head_dict, 'segmentation_head must in: {}'.format(
            segmentation_head_dict)

        backbone_model, backbone_out = backbone_dict[backbone]['models'], backbone_dict[backbone]['out']
        self.backbone = backbone_model(pretrained=pretrained)
        self.segmentation_head = segmentation_head_dict[segmentation_head](backbone_out, **model_config)
        self.name = '{}_{}'.format(backbone, segmentation_head)

    def forward(self, x):
        _, _, H, W = x.size()
        backbone_out = self.backbone(x)
        segmentation_head_out = self.segmentation_head(backbone_out)
        y = F.interpolate(segmentation_head_out, size=(H, W), mode='bilinear', align_corners=True)
        return y


model_config = {
    'backbone': 'resnet18',
    'fpem_repeat': 2,
    'pretrained': False,
    'result_num': 6,
    'segmentation_head': 'FPEM_FFM'
}


def get_model(config):
    model = Model(model_config=config)
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    x = torch.rand(2, 3, 64, 64)
    x2 = torch.rand(2, 3, 96, 64)
    return Model(model_config=model_config), [(x,), (x2,)]
