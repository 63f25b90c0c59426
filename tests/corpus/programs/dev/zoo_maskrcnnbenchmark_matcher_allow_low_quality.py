"""maskrcnn-benchmark Matcher: `numel() == 0` early return, boolean-mask writes of BELOW_LOW/BETWEEN thresholds, and `set_low_quality_matches_` with `torch.nonzero` of the tie matrix.

Source: facebookresearch/maskrcnn-benchmark@61ffdb3803db562c23d883439aee16e599c051e6:maskrcnn_benchmark/modeling/matcher.py:5-112 (boxlist_iou from maskrcnn_benchmark/structures/boxlist_ops.py)
Kept: Matcher as written (class constants, the assert, __call__ with the
empty case, `all_matches = matches.clone()` under the flag, the mask
writes, set_low_quality_matches_ with `torch.nonzero`), boxlist_iou's
TO_REMOVE arithmetic, and a caller that receives the matcher as an argument.
Simplified: boxes are plain [N, 4] tensors instead of BoxList objects.
"""
import torch


class Matcher(object):
    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold, low_threshold, allow_low_quality_matches=False):
        assert low_threshold <= high_threshold
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix):
        if match_quality_matrix.numel() == 0:
            # handle empty case
            device = match_quality_matrix.device
            return torch.empty((0,), dtype=torch.int64, device=device)

        # match_quality_matrix is M (gt) x N (predicted)
        # Max over gt elements (dim 0) to find best gt candidate for each prediction
        matched_vals, matches = match_quality_matrix.max(dim=0)
        if self.allow_low_quality_matches:
            all_matches = matches.clone()

        # Assign candidate matches with low quality to negative (unassigned) values
        below_low_threshold = matched_vals < self.low_threshold
        between_thresholds = (matched_vals >= self.low_threshold) & (
            matched_vals < self.high_threshold
        )
        matches[below_low_threshold] = Matcher.BELOW_LOW_THRESHOLD
        matches[between_thresholds] = Matcher.BETWEEN_THRESHOLDS

        if self.allow_low_quality_matches:
            self.set_low_quality_matches_(matches, all_matches, match_quality_matrix)

        return matches

    def set_low_quality_matches_(self, matches, all_matches, match_quality_matrix):
        # For each gt, find the prediction with which it has highest quality
        highest_quality_foreach_gt, _ = match_quality_matrix.max(dim=1)
        # Find highest quality match available, even if it is low, including ties
        gt_pred_pairs_of_highest_quality = torch.nonzero(
            match_quality_matrix == highest_quality_foreach_gt[:, None]
        )
        pred_inds_to_update = gt_pred_pairs_of_highest_quality[:, 1]
        matches[pred_inds_to_update] = all_matches[pred_inds_to_update]


def boxlist_iou(box1, box2):
    N = len(box1)
    M = len(box2)

    TO_REMOVE = 1

    area1 = (box1[:, 2] - box1[:, 0] + TO_REMOVE) * (box1[:, 3] - box1[:, 1] + TO_REMOVE)
    area2 = (box2[:, 2] - box2[:, 0] + TO_REMOVE) * (box2[:, 3] - box2[:, 1] + TO_REMOVE)

    lt = torch.max(box1[:, None, :2], box2[:, :2])  # [N,M,2]
    rb = torch.min(box1[:, None, 2:], box2[:, 2:])  # [N,M,2]

    wh = (rb - lt + TO_REMOVE).clamp(min=0)  # [N,M,2]
    inter = wh[:, :, 0] * wh[:, :, 1]  # [N,M]

    iou = inter / (area1[:, None] + area2 - inter)
    return iou


@torch.compile
def match_targets_to_anchors(matcher, target_boxes, anchors):
    match_quality_matrix = boxlist_iou(target_boxes, anchors)
    matched_idxs = matcher(match_quality_matrix)
    matched_targets = target_boxes[matched_idxs.clamp(min=0)]
    return matched_targets, matched_idxs


def make():
    torch.manual_seed(0)
    rpn_matcher = Matcher(0.7, 0.3, allow_low_quality_matches=True)
    roi_matcher = Matcher(0.5, 0.5, allow_low_quality_matches=False)
    anchors = torch.tensor([[0., 0., 15., 15.], [16., 0., 31., 15.], [0., 16., 15., 31.],
                            [16., 16., 31., 31.], [8., 8., 23., 23.], [4., 4., 27., 27.]])
    gt = torch.tensor([[0., 0., 15., 15.], [10., 12., 29., 30.]])
    empty = torch.zeros(0, 4)
    return match_targets_to_anchors._torchdynamo_orig_callable, [
        (rpn_matcher, gt, anchors),
        (roi_matcher, gt, anchors),
        (rpn_matcher, empty, anchors),
    ]
