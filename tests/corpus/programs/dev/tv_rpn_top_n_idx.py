"""torchvision RPN `_get_top_n_idx` + the head of filter_proposals: per-level topk with `_topk_min`, gather by batch index (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/detection/rpn.py:231-268; torchvision/models/detection/_utils.py:_topk_min
Kept: _topk_min (the `not torchvision._is_tracing()` min with the axis size),
_get_top_n_idx (split by level, topk, offsets), and filter_proposals up to the
sigmoid: the level ids via torch.full per level, expand_as, advanced indexing
with batch_idx, the training/testing pre_nms_top_n dict.
Simplified: the per-image NMS loop is left out; 2 levels of 6 and 3 anchors.
"""
import torch
from torch import Tensor


def _is_tracing():
    return torch._C._get_tracing_state() is not None


def _topk_min(input: Tensor, orig_kval: int, axis: int) -> int:
    if not _is_tracing():
        return min(orig_kval, input.size(axis))
    axis_dim_val = torch._shape_as_tensor(input)[axis].unsqueeze(0)
    min_kval = torch.min(torch.cat((torch.tensor([orig_kval], dtype=axis_dim_val.dtype), axis_dim_val), 0))
    return min_kval


class RegionProposalNetwork(torch.nn.Module):
    def __init__(self, pre_nms_top_n=dict(training=4, testing=2)):
        super().__init__()
        self._pre_nms_top_n = pre_nms_top_n

    def pre_nms_top_n(self) -> int:
        if self.training:
            return self._pre_nms_top_n["training"]
        return self._pre_nms_top_n["testing"]

    def _get_top_n_idx(self, objectness: Tensor, num_anchors_per_level: list) -> Tensor:
        r = []
        offset = 0
        for ob in objectness.split(num_anchors_per_level, 1):
            num_anchors = ob.shape[1]
            pre_nms_top_n = _topk_min(ob, self.pre_nms_top_n(), 1)
            _, top_n_idx = ob.topk(pre_nms_top_n, dim=1)
            r.append(top_n_idx + offset)
            offset += num_anchors
        return torch.cat(r, dim=1)

    def forward(self, proposals: Tensor, objectness: Tensor, num_anchors_per_level: list):
        num_images = proposals.shape[0]
        device = proposals.device
        objectness = objectness.detach()
        objectness = objectness.reshape(num_images, -1)
        levels = [torch.full((n,), idx, dtype=torch.int64, device=device) for idx, n in enumerate(num_anchors_per_level)]
        levels = torch.cat(levels, 0)
        levels = levels.reshape(1, -1).expand_as(objectness)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        image_range = torch.arange(num_images, device=device)
        batch_idx = image_range[:, None]
        objectness = objectness[batch_idx, top_n_idx]
        levels = levels[batch_idx, top_n_idx]
        proposals = proposals[batch_idx, top_n_idx]
        return proposals, torch.sigmoid(objectness), levels


rpn = RegionProposalNetwork()
rpn.eval()
rpn = torch.compile(rpn)


def make():
    torch.manual_seed(0)
    return RegionProposalNetwork().eval(), [(torch.rand(2, 9, 4), torch.randn(2, 9), [6, 3])]
