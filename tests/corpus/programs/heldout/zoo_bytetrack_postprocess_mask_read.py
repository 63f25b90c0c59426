"""ByteTrack/YOLOX detection postprocess: per image, `if not image_pred.size(0): continue`, a confidence mask selects `detections[conf_mask]`, `if not detections.size(0): continue` on the data-dependent count, then batched NMS and `detections[nms_out_index]`.

Source: ifzhang/ByteTrack@4aa0251e764a95c21522c7f679ca3b935d8b7bef:yolox/utils/boxes.py:33-75
Kept: postprocess verbatim (box_corner from prediction.new, in-place corner
write-back, the output list of None, both continues, the torch.cat accumulation).
Simplified: torchvision.ops.batched_nms is replaced by a pure-torch stand-in
(torchvision's coordinate-offset trick around a greedy NMS) marked
@torch.compiler.disable, standing in for the opaque compiled op.
"""
import torch


def _box_iou(boxes1, boxes2):
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


@torch.compiler.disable
def batched_nms(boxes, scores, idxs, iou_threshold):
    """Stand-in for torchvision.ops.batched_nms (coordinate trick + greedy NMS)."""
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        iou = _box_iou(boxes_for_nms[i].unsqueeze(0), boxes_for_nms[order[1:]])[0]
        order = order[1:][iou <= iou_threshold]
    return torch.stack(keep)


def postprocess(prediction, num_classes, conf_thre=0.7, nms_thre=0.45):
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
        class_conf, class_pred = torch.max(
            image_pred[:, 5: 5 + num_classes], 1, keepdim=True
        )

        conf_mask = (image_pred[:, 4] * class_conf.squeeze() >= conf_thre).squeeze()
        # Detections ordered as (x1, y1, x2, y2, obj_conf, class_conf, class_pred)
        detections = torch.cat((image_pred[:, :5], class_conf, class_pred.float()), 1)
        detections = detections[conf_mask]
        if not detections.size(0):
            continue

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


postprocess_compiled = torch.compile(postprocess, backend="inductor")


def make():
    torch.manual_seed(0)
    num_classes = 2
    boxes = torch.rand(2, 6, 4) * torch.tensor([64.0, 64.0, 16.0, 16.0]) + torch.tensor([0.0, 0.0, 4.0, 4.0])
    obj = torch.tensor([[0.95, 0.9, 0.2, 0.85, 0.1, 0.05],
                        [0.1, 0.2, 0.05, 0.3, 0.1, 0.15]]).unsqueeze(-1)
    cls = torch.tensor([[[0.9, 0.1], [0.8, 0.2], [0.5, 0.5], [0.1, 0.95], [0.3, 0.3], [0.6, 0.2]],
                        [[0.9, 0.1], [0.4, 0.2], [0.5, 0.5], [0.1, 0.6], [0.3, 0.3], [0.6, 0.2]]])
    prediction = torch.cat([boxes, obj, cls], -1)
    return postprocess, [(prediction.clone(), num_classes, 0.5, 0.45),
                         (prediction.clone(), num_classes, 0.99, 0.45)]
