"""YOLOX postprocess: per image, `detections[conf_mask]` keeps confident boxes and `if not detections.size(0): continue` skips empty images before NMS.

Source: Megvii-BaseDetection/YOLOX@00767321e71216ae5b9be1c8f6a79479fe3f011f:yolox/utils/boxes.py:32-102
Kept: postprocess verbatim (cxcywh -> xyxy written into the prediction, the
per-image loop with its two size checks, the class-agnostic / batched NMS
choice, the output list of None or tensors), bboxes_iou from the same file.
Simplified: torchvision.ops.nms / batched_nms are replaced by a pure-torch
matrix NMS (sorted IoU upper triangle, the batched variant with the
coordinate-offset trick torchvision uses); 3 classes, 6 anchors.
"""
import torch


def bboxes_iou(bboxes_a, bboxes_b, xyxy=True):
    if bboxes_a.shape[1] != 4 or bboxes_b.shape[1] != 4:
        raise IndexError

    if xyxy:
        tl = torch.max(bboxes_a[:, None, :2], bboxes_b[:, :2])
        br = torch.min(bboxes_a[:, None, 2:], bboxes_b[:, 2:])
        area_a = torch.prod(bboxes_a[:, 2:] - bboxes_a[:, :2], 1)
        area_b = torch.prod(bboxes_b[:, 2:] - bboxes_b[:, :2], 1)
    else:
        tl = torch.max(
            (bboxes_a[:, None, :2] - bboxes_a[:, None, 2:] / 2),
            (bboxes_b[:, :2] - bboxes_b[:, 2:] / 2),
        )
        br = torch.min(
            (bboxes_a[:, None, :2] + bboxes_a[:, None, 2:] / 2),
            (bboxes_b[:, :2] + bboxes_b[:, 2:] / 2),
        )

        area_a = torch.prod(bboxes_a[:, 2:], 1)
        area_b = torch.prod(bboxes_b[:, 2:], 1)
    en = (tl < br).type(tl.type()).prod(dim=2)
    area_i = torch.prod(br - tl, 2) * en  # * ((tl < br).all())
    return area_i / (area_a[:, None] + area_b - area_i)


def nms(boxes, scores, iou_threshold):
    """Stand-in for torchvision.ops.nms (matrix form)."""
    order = scores.argsort(descending=True)
    iou = bboxes_iou(boxes[order], boxes[order]).triu_(diagonal=1)
    keep = iou.max(dim=0).values <= iou_threshold
    return order[keep]


def batched_nms(boxes, scores, idxs, iou_threshold):
    """Stand-in for torchvision.ops.batched_nms (_batched_nms_coordinate_trick)."""
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    return nms(boxes_for_nms, scores, iou_threshold)


def postprocess(prediction, num_classes, conf_thre=0.7, nms_thre=0.45, class_agnostic=False):
    box_corner = prediction.new(prediction.shape)
    box_corner[:, :, 0] = prediction[:, :, 0] - prediction[:, :, 2] / 2
    box_corner[:, :, 1] = prediction[:, :, 1] - prediction[:, :, 3] / 2
    box_corner[:, :, 2] = prediction[:, :, 0] + prediction[:, :, 2] / 2
    box_corner[:, :, 3] = prediction[:, :, 1] + prediction[:, :, 3] / 2
    prediction[:, :, :4] = box_corner[:, :, :4]

    output = [None for _ in range(len(prediction))]
    for i, image_pred in enumerate(prediction):

        # If none are remaining => process next image
        if not image_pred.size(0):
            continue
        # Get score and class with highest confidence
        class_conf, class_pred = torch.max(image_pred[:, 5: 5 + num_classes], 1, keepdim=True)

        conf_mask = (image_pred[:, 4] * class_conf.squeeze() >= conf_thre).squeeze()
        # Detections ordered as (x1, y1, x2, y2, obj_conf, class_conf, class_pred)
        detections = torch.cat((image_pred[:, :5], class_conf, class_pred.float()), 1)
        detections = detections[conf_mask]
        if not detections.size(0):
            continue

        if class_agnostic:
            nms_out_index = nms(
                detections[:, :4],
                detections[:, 4] * detections[:, 5],
                nms_thre,
            )
        else:
            nms_out_index = batched_nms(
                detections[:, :4],
                detections[:, 4] * detections[:, 5],
                detections[:, 6],
                nms_thre,
            )

        detections = detections[nms_out_index]
        if output[i] is None:
            output[i] = detections
        else:
            output[i] = torch.cat((output[i], detections))

    return output


compiled_postprocess = torch.compile(postprocess)


def _prediction(batch, anchors, num_classes):
    xy = torch.rand(batch, anchors, 2) * 32
    wh = torch.rand(batch, anchors, 2) * 8 + 2
    obj = torch.rand(batch, anchors, 1)
    cls = torch.rand(batch, anchors, num_classes)
    return torch.cat([xy, wh, obj, cls], dim=-1)


def make():
    torch.manual_seed(0)
    pred = _prediction(2, 6, 3)
    empty_image = torch.zeros(1, 0, 8)
    return postprocess, [
        (pred, 3, 0.1, 0.45, False),
        (pred.clone(), 3, 0.1, 0.45, True),
        (pred.clone(), 3, 0.99, 0.45, False),
        (empty_image, 3, 0.1, 0.45, False),
    ]
