"""mmpretrain ArcFaceClsHead: in training the target goes through `convert_to_one_hot`, whose `assert (torch.max(targets).item() < classes)` guards F.one_hot, after an additive angular margin chosen by `torch.where(cosine > self.threshold, ...)`; eval returns scaled cosines from NormProduct (with sub-centers).

Source: open-mmlab/mmpretrain@ee7f2e88501f61aa95c742dd5f429f039935ee90:mmpretrain/models/heads/margin_head.py:18-265; mmpretrain/models/losses/utils.py:103-119
Kept: NormProduct, ArcFaceClsHead.__init__ (float/sequence margins, the sinm_m and
threshold buffers), pre_logits, _get_logit_with_margin, forward, and convert_to_one_hot
verbatim (docstrings trimmed).
Simplified: mmengine's autocast(enabled=False) is torch.autocast('cpu', enabled=False); no
registry (the loss module is not built; `loss()` is not part of the compiled forward);
mmengine's is_seq_of is an all(isinstance(...)) check; the
`.txt` margins branch and ClsHead base are dropped; 16-d features, 6 classes, 3 sub-centers.
"""
import math
from typing import Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F


def convert_to_one_hot(targets: torch.Tensor, classes) -> torch.Tensor:
    """This function converts target class indices to one-hot vectors, given
    the number of classes.
    """
    assert (torch.max(targets).item() <
            classes), 'Class Index must be less than number of classes'
    one_hot_targets = F.one_hot(
        targets.long().squeeze(-1), num_classes=classes)
    return one_hot_targets


class NormProduct(nn.Linear):
    def __init__(self,
                 in_features: int,
                 out_features: int,
                 k=1,
                 bias: bool = False,
                 feature_norm: bool = True,
                 weight_norm: bool = True):

        super().__init__(in_features, out_features * k, bias=bias)
        self.weight_norm = weight_norm
        self.feature_norm = feature_norm
        self.out_features = out_features
        self.k = k

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.feature_norm:
            input = F.normalize(input)
        if self.weight_norm:
            weight = F.normalize(self.weight)
        else:
            weight = self.weight
        cosine_all = F.linear(input, weight, self.bias)

        if self.k == 1:
            return cosine_all
        else:
            cosine_all = cosine_all.view(-1, self.out_features, self.k)
            cosine, _ = torch.max(cosine_all, dim=2)
            return cosine


class ArcFaceClsHead(nn.Module):
    def __init__(self,
                 num_classes: int,
                 in_channels: int,
                 num_subcenters: int = 1,
                 scale: float = 64.,
                 margins: Optional[Union[float, Sequence[float], str]] = 0.50,
                 easy_margin: bool = False,
                 loss: dict = dict(type='CrossEntropyLoss', loss_weight=1.0),
                 init_cfg: Optional[dict] = None):

        super(ArcFaceClsHead, self).__init__()

        assert num_subcenters >= 1 and num_classes >= 0
        self.in_channels = in_channels
        self.num_classes = num_classes
        self.num_subcenters = num_subcenters
        self.scale = scale
        self.easy_margin = easy_margin

        self.norm_product = NormProduct(in_channels, num_classes,
                                        num_subcenters)

        if isinstance(margins, float):
            margins = [margins] * num_classes
        else:
            assert all(isinstance(m, (float, int)) for m in list(margins)), (
                'the attribute `margins` in ``ArcFaceClsHead`` should be a '
                ' float, a Sequence of float, or a ".txt" file path.')

        assert len(margins) == num_classes, \
            'The length of margins must be equal with num_classes.'

        self.register_buffer(
            'margins', torch.tensor(margins).float(), persistent=False)
        # To make `phi` monotonic decreasing, refers to
        # https://github.com/deepinsight/insightface/issues/108
        sinm_m = torch.sin(math.pi - self.margins) * self.margins
        threshold = torch.cos(math.pi - self.margins)
        self.register_buffer('sinm_m', sinm_m, persistent=False)
        self.register_buffer('threshold', threshold, persistent=False)

    def pre_logits(self, feats: Tuple[torch.Tensor]) -> torch.Tensor:
        # The ArcFaceHead doesn't have other module, just return after
        # unpacking.
        return feats[-1]

    def _get_logit_with_margin(self, pre_logits, target):
        """add arc margin to the cosine in target index.

        The target must be in index format.
        """
        assert target.dim() == 1 or (
            target.dim() == 2 and target.shape[1] == 1), \
            'The target must be in index format.'
        cosine = self.norm_product(pre_logits)
        phi = torch.cos(torch.acos(cosine) + self.margins)

        if self.easy_margin:
            # when cosine>0, choose phi
            # when cosine<=0, choose cosine
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            # when cos>th, choose phi
            # when cos<=th, choose cosine-mm
            phi = torch.where(cosine > self.threshold, phi,
                              cosine - self.sinm_m)

        target = convert_to_one_hot(target, self.num_classes)
        output = target * phi + (1 - target) * cosine
        return output

    def forward(self,
                feats: Tuple[torch.Tensor],
                target: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The forward process."""
        # Disable AMP
        with torch.autocast(device_type='cpu', enabled=False):
            pre_logits = self.pre_logits(feats)

            if target is None:
                # when eval, logit is the cosine between W and pre_logits;
                # cos(theta_yj) = (x/||x||) * (W/||W||)
                logit = self.norm_product(pre_logits)
            else:
                # when training, add a margin to the pre_logits where target is
                # True, then logit is the cosine between W and new pre_logits
                logit = self._get_logit_with_margin(pre_logits, target)

        return self.scale * logit


head_cfg = dict(num_classes=6, in_channels=16, num_subcenters=3, scale=32.,
                margins=[0.5, 0.5, 0.4, 0.4, 0.3, 0.3])


def build_head():
    return ArcFaceClsHead(**head_cfg)


head = torch.compile(build_head(), dynamic=False)


def make():
    torch.manual_seed(0)
    feats = (torch.randn(4, 8), torch.randn(4, 16))
    return build_head(), [(feats, torch.tensor([0, 5, 2, 3])),
                          (feats, torch.tensor([[1], [1], [4], [0]])),
                          (feats,)]
