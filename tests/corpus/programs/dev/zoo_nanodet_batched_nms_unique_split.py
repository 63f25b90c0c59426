"""NanoDet's multiclass_nms: `torch.masked_select` score filtering, `valid_mask.nonzero()` labels, an empty-result early return with an ONNX-export check, and batched_nms's `for id in torch.unique(idxs)` split path.

Source: RangiLyu/nanodet@be9b4a9001d7f9b6fc89c2df31ae8d428e35b4f0:nanodet/model/module/nms.py:5-127
Kept: multiclass_nms and batched_nms as written (nms_cfg copied and
popped, class_agnostic offsets, the `len(boxes_for_nms) < split_thr`
branch with the per-class nonzero loop), called per image the way
NanoDetPlusHead.get_bboxes calls it.
Simplified: torchvision.ops.nms is replaced by a pure-torch greedy NMS
stand-in (`nms` below) that keeps boxes through a boolean mask; 3 classes,
8 candidate boxes.
"""
import torch


def nms(boxes, scores, iou_threshold):
    # Stand-in for torchvision.ops.nms: greedy suppression in score order.
    order = scores.argsort(descending=True)
    boxes = boxes[order]
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    lt = torch.max(boxes[:, None, :2], boxes[None, :, :2])
    rb = torch.min(boxes[:, None, 2:], boxes[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    iou = inter / (area[:, None] + area[None, :] - inter)
    keep = torch.ones_like(scores, dtype=torch.bool)
    later = torch.triu(torch.ones_like(iou, dtype=torch.bool), diagonal=1)
    for i in range(boxes.size(0)):
        keep = keep & ~((iou[i] > iou_threshold) & later[i] & keep[i])
    return order[keep]


def multiclass_nms(
    multi_bboxes, multi_scores, score_thr, nms_cfg, max_num=-1, score_factors=None
):
    """NMS for multi-class bboxes."""
    num_classes = multi_scores.size(1) - 1
    # exclude background category
    if multi_bboxes.shape[1] > 4:
        bboxes = multi_bboxes.view(multi_scores.size(0), -1, 4)
    else:
        bboxes = multi_bboxes[:, None].expand(multi_scores.size(0), num_classes, 4)
    scores = multi_scores[:, :-1]

    # filter out boxes with low scores
    valid_mask = scores > score_thr

    # We use masked_select for ONNX exporting purpose,
    # which is equivalent to bboxes = bboxes[valid_mask]
    # we have to use this ugly code
    bboxes = torch.masked_select(
        bboxes, torch.stack((valid_mask, valid_mask, valid_mask, valid_mask), -1)
    ).view(-1, 4)
    if score_factors is not None:
        scores = scores * score_factors[:, None]
    scores = torch.masked_select(scores, valid_mask)
    labels = valid_mask.nonzero(as_tuple=False)[:, 1]

    if bboxes.numel() == 0:
        bboxes = multi_bboxes.new_zeros((0, 5))
        labels = multi_bboxes.new_zeros((0,), dtype=torch.long)

        if torch.onnx.is_in_onnx_export():
            raise RuntimeError(
                "[ONNX Error] Can not record NMS "
                "as it has not been executed this time"
            )
        return bboxes, labels

    dets, keep = batched_nms(bboxes, scores, labels, nms_cfg)

    if max_num > 0:
        dets = dets[:max_num]
        keep = keep[:max_num]

    return dets, labels[keep]


def batched_nms(boxes, scores, idxs, nms_cfg, class_agnostic=False):
    """Performs non-maximum suppression in a batched fashion."""
    nms_cfg_ = nms_cfg.copy()
    class_agnostic = nms_cfg_.pop("class_agnostic", class_agnostic)
    if class_agnostic:
        boxes_for_nms = boxes
    else:
        max_coordinate = boxes.max()
        offsets = idxs.to(boxes) * (max_coordinate + 1)
        boxes_for_nms = boxes + offsets[:, None]
    nms_cfg_.pop("type", "nms")
    split_thr = nms_cfg_.pop("split_thr", 10000)
    if len(boxes_for_nms) < split_thr:
        keep = nms(boxes_for_nms, scores, **nms_cfg_)
        boxes = boxes[keep]
        scores = scores[keep]
    else:
        total_mask = scores.new_zeros(scores.size(), dtype=torch.bool)
        for id in torch.unique(idxs):
            mask = (idxs == id).nonzero(as_tuple=False).view(-1)
            keep = nms(boxes_for_nms[mask], scores[mask], **nms_cfg_)
            total_mask[mask[keep]] = True

        keep = total_mask.nonzero(as_tuple=False).view(-1)
        keep = keep[scores[keep].argsort(descending=True)]
        boxes = boxes[keep]
        scores = scores[keep]

    return torch.cat([boxes, scores[:, None]], -1), keep


@torch.compile
def get_bboxes(cls_preds, det_bboxes, score_thr, nms_cfg, max_num=100):
    result_list = []
    for score, bbox in zip(cls_preds, det_bboxes):
        # add a dummy background class at the end of all labels
        # same with mmdetection2.0
        padding = score.new_zeros(score.shape[0], 1)
        score = torch.cat([score, padding], dim=1)
        results = multiclass_nms(
            bbox,
            score,
            score_thr=score_thr,
            nms_cfg=nms_cfg,
            max_num=max_num,
        )
        result_list.append(results)
    return result_list


def make():
    torch.manual_seed(0)
    xy = torch.rand(1, 8, 2) * 20
    bboxes = torch.cat([xy, xy + 8 + torch.rand(1, 8, 2) * 4], -1)
    scores = torch.rand(1, 8, 3)
    cfg = dict(type="nms", iou_threshold=0.5)
    split = dict(type="nms", iou_threshold=0.5, split_thr=4)
    agnostic = dict(type="nms", iou_threshold=0.5, class_agnostic=True)
    fn = get_bboxes._torchdynamo_orig_callable
    return fn, [
        (scores, bboxes, 0.3, cfg),
        (scores, bboxes, 0.3, split, 3),
        (scores, bboxes, 0.3, agnostic),
        (scores, bboxes, 1.0, cfg),
    ]
