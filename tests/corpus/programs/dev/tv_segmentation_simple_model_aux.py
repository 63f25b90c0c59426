"""torchvision _SimpleSegmentationModel (FCN/DeepLabV3): backbone dict features, OrderedDict result, optional aux classifier (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/segmentation/_utils.py:11-37
Kept: the forward verbatim (input_shape from x.shape, features["out"],
classifier + bilinear upsample to the input size, the
`aux_classifier is not None` branch reading features["aux"]).
Simplified: the backbone returns a dict from two convs; classifiers are 1x1 convs.
"""
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer3 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.layer4 = nn.Conv2d(4, 8, 3, stride=2, padding=1)

    def forward(self, x):
        aux = self.layer3(x)
        return OrderedDict([("aux", aux), ("out", self.layer4(aux))])


class _SimpleSegmentationModel(nn.Module):
    __constants__ = ["aux_classifier"]

    def __init__(self, backbone, classifier, aux_classifier=None):
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x):
        input_shape = x.shape[-2:]
        features = self.backbone(x)
        result = OrderedDict()
        x = features["out"]
        x = self.classifier(x)
        x = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
        result["out"] = x
        if self.aux_classifier is not None:
            x = features["aux"]
            x = self.aux_classifier(x)
            x = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
            result["aux"] = x
        return result


class FCN(_SimpleSegmentationModel):
    pass


def fcn_resnet50(aux_loss=True):
    return FCN(Backbone(), nn.Conv2d(8, 3, 1), nn.Conv2d(4, 3, 1) if aux_loss else None)


model = torch.compile(fcn_resnet50().eval())


def make():
    torch.manual_seed(0)
    return fcn_resnet50().eval(), [(torch.randn(1, 3, 8, 8),)]
