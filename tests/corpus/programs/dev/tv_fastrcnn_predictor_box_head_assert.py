"""torchvision Faster R-CNN box branch: TwoMLPHead flatten + relu MLP, FastRCNNPredictor's `x.dim() == 4` shape assert, class / box outputs.

Source: pytorch/vision@01fdb48883a534c746b1c60683a6eb4d70e72db6:torchvision/models/detection/faster_rcnn.py:205-222,244-296
Kept: FasterRCNN.__init__'s default box head / predictor plumbing
(`resolution = box_roi_pool.output_size[0]`, TwoMLPHead(out_channels *
resolution ** 2, representation_size), FastRCNNPredictor(representation_size,
num_classes)), TwoMLPHead.forward and FastRCNNPredictor.forward with the
`if x.dim() == 4: assert list(x.shape[2:]) == [1, 1]` check.
Simplified: MultiScaleRoIAlign is replaced by an object carrying only its
output_size (the branch receives already-pooled RoI features);
representation_size 32 instead of 1024, out_channels 8, 3x3 pooled features,
5 classes; the branch is the part of RoIHeads.forward that calls
box_head and box_predictor.
"""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class TwoMLPHead(nn.Module):
    """
    Standard heads for FPN-based models

    Args:
        in_channels (int): number of input channels
        representation_size (int): size of the intermediate representation
    """

    def __init__(self, in_channels: int, representation_size: int) -> None:
        super(TwoMLPHead, self).__init__()

        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x):
        x = x.flatten(start_dim=1)

        x = F.relu(self.fc6(x))
        x = F.relu(self.fc7(x))

        return x


class FastRCNNPredictor(nn.Module):
    """
    Standard classification + bounding box regression layers
    for Fast R-CNN.

    Args:
        in_channels (int): number of input channels
        num_classes (int): number of output classes (including background)
    """

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super(FastRCNNPredictor, self).__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x):
        if x.dim() == 4:
            assert list(x.shape[2:]) == [1, 1]
        x = x.flatten(start_dim=1)
        scores = self.cls_score(x)
        bbox_deltas = self.bbox_pred(x)

        return scores, bbox_deltas


class _RoIPoolSpec:
    """Stands in for MultiScaleRoIAlign: only its output_size is read here."""

    def __init__(self, output_size):
        self.output_size = (output_size, output_size)


class BoxBranch(nn.Module):
    def __init__(
        self,
        out_channels: int = 8,
        num_classes: int = 5,
        box_roi_pool: Optional[_RoIPoolSpec] = None,
        box_head: Optional[nn.Module] = None,
        box_predictor: Optional[nn.Module] = None,
    ):
        super().__init__()
        if box_roi_pool is None:
            box_roi_pool = _RoIPoolSpec(3)

        if box_head is None:
            resolution = box_roi_pool.output_size[0]
            representation_size = 32
            box_head = TwoMLPHead(out_channels * resolution ** 2, representation_size)

        if box_predictor is None:
            representation_size = 32
            box_predictor = FastRCNNPredictor(representation_size, num_classes)

        self.box_head = box_head
        self.box_predictor = box_predictor

    def forward(self, box_features):
        box_features = self.box_head(box_features)
        class_logits, box_regression = self.box_predictor(box_features)
        return class_logits, box_regression


branch = torch.compile(BoxBranch().eval())


def make():
    torch.manual_seed(0)
    return BoxBranch().eval(), [(torch.randn(6, 8, 3, 3),), (torch.randn(2, 8, 3, 3),)]
