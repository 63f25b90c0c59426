"""facenet-pytorch MTCNN proposal stage: an image pyramid `while minl >= 12`, generateBoundingBox's `probs >= thresh` mask and `mask.nonzero()`, NMS, then `if numbox > 0` with rerec and pad's boolean-mask clamps.

Source: timesler/facenet-pytorch@00a3965e04fa8e3fcc2932bef6cf9c46dc52095f:models/utils/detect_face.py:9-60,143-214 (detect_face's P-Net stage and the start of its refinement stage; bbreg, generateBoundingBox, pad, rerec, imresample; PNet from models/mtcnn.py)
Kept: the pyramid loop with `int(h * scale + 1)` sizes and imresample,
the per-image zip over (reg, probs), generateBoundingBox, proposal lists
concatenated per image, the `numbox > 0` block with the regression
arithmetic, rerec and pad (`boxes.get_device()`, `.int()` casts and masked
writes), and PNet.
Simplified: images arrive as a float tensor (no PIL/numpy conversion);
torchvision's nms is a pure-torch stand-in that also returns a
data-dependent number of indices; the R-Net/O-Net stages are left out.
"""
import torch
from torch import nn


def nms(boxes, scores, iou_threshold):
    # Stand-in for torchvision.ops.boxes.nms: a data-dependent number of
    # kept indices, highest score first.
    order = scores.argsort(descending=True)
    boxes = boxes[order]
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    lt = torch.max(boxes[:, None, :2], boxes[:, :2])
    rb = torch.min(boxes[:, None, 2:], boxes[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    iou = inter / (area[:, None] + area - inter)
    suppressed = (iou.triu(diagonal=1) > iou_threshold).any(0)
    return order[~suppressed]


class PNet(nn.Module):
    """MTCNN PNet."""

    def __init__(self):
        super().__init__()

        self.conv1 = nn.Conv2d(3, 10, kernel_size=3)
        self.prelu1 = nn.PReLU(10)
        self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(10, 16, kernel_size=3)
        self.prelu2 = nn.PReLU(16)
        self.conv3 = nn.Conv2d(16, 32, kernel_size=3)
        self.prelu3 = nn.PReLU(32)
        self.conv4_1 = nn.Conv2d(32, 2, kernel_size=1)
        self.softmax4_1 = nn.Softmax(dim=1)
        self.conv4_2 = nn.Conv2d(32, 4, kernel_size=1)

        self.training = False

    def forward(self, x):
        x = self.conv1(x)
        x = self.prelu1(x)
        x = self.pool1(x)
        x = self.conv2(x)
        x = self.prelu2(x)
        x = self.conv3(x)
        x = self.prelu3(x)
        a = self.conv4_1(x)
        a = self.softmax4_1(a)
        b = self.conv4_2(x)
        return b, a


def generateBoundingBox(reg, probs, scale, thresh):
    stride = 2
    cellsize = 12

    mask = probs >= thresh
    score = probs[mask]
    reg = reg[:, mask].permute(1, 0)
    bb = mask.nonzero().float().flip(1)
    q1 = ((stride * bb + 1) / scale).floor()
    q2 = ((stride * bb + cellsize - 1 + 1) / scale).floor()
    boundingbox = torch.cat((q1, q2, score.unsqueeze(1), reg), dim=1)

    return boundingbox


def pad(boxes, w, h):
    device = "cpu" if boxes.get_device() == -1 else boxes.get_device()

    tmpw = (boxes[:, 2] - boxes[:, 0] + 1).int()
    tmph = (boxes[:, 3] - boxes[:, 1] + 1).int()

    numbox = boxes.shape[0]
    dx = torch.ones(numbox, dtype=torch.int, device=device)
    dy = torch.ones(numbox, dtype=torch.int, device=device)
    edx = tmpw
    edy = tmph

    x = boxes[:, 0].int()
    y = boxes[:, 1].int()
    ex = boxes[:, 2].int()
    ey = boxes[:, 3].int()

    tmp = ex > w
    edx[tmp] = -ex[tmp] + w + tmpw[tmp]
    ex[tmp] = w

    tmp = ey > h
    edy[tmp] = -ey[tmp] + h + tmph[tmp]
    ey[tmp] = h

    tmp = x < 1
    dx[tmp] = 2 - x[tmp]
    x[tmp] = 1

    tmp = y < 1
    dy[tmp] = 2 - y[tmp]
    y[tmp] = 1

    return dy, edy, dx, edx, y, ey, x, ex, tmpw, tmph


def rerec(boxes):
    h = boxes[:, 3] - boxes[:, 1]
    w = boxes[:, 2] - boxes[:, 0]

    l = torch.max(w, h)
    boxes[:, 0] = boxes[:, 0] + w * 0.5 - l * 0.5
    boxes[:, 1] = boxes[:, 1] + h * 0.5 - l * 0.5
    boxes[:, 2:4] = boxes[:, 0:2] + l.repeat(2, 1).permute(1, 0)

    return boxes


def imresample(img, sz):
    im_data = torch.nn.functional.interpolate(img, size=sz, mode="area")
    return im_data


def detect_proposals(imgs, minsize, pnet, threshold, factor):
    h, w = imgs.shape[2:4]
    scale = 12.0 / minsize
    minl = min(h, w) * scale

    # Proposal network
    proposal_boxes = [[] for _ in range(len(imgs))]
    while minl >= 12:
        hs = int(h * scale + 1)
        ws = int(w * scale + 1)
        img_x = imresample(imgs, (hs, ws))
        img_x = (img_x - 127.5) * 0.0078125
        reg, probs = pnet(img_x)

        for i, (reg_i, probs_i) in enumerate(zip(reg, probs)):
            boxes = generateBoundingBox(reg_i, probs_i[1], scale, threshold[0])
            pick = nms(boxes[:, :4], boxes[:, 4], 0.5)
            boxes = boxes[pick]
            proposal_boxes[i].append(boxes)

        scale = scale * factor
        minl = minl * factor

    proposal_boxes = [torch.cat(p) for p in proposal_boxes]

    batch_boxes = []
    for img, total_boxes in zip(imgs, proposal_boxes):
        numbox = total_boxes.shape[0]
        if numbox > 0:
            pick = nms(total_boxes[:, :4], total_boxes[:, 4], 0.7)
            total_boxes = total_boxes[pick]
            regw = total_boxes[:, 2] - total_boxes[:, 0]
            regh = total_boxes[:, 3] - total_boxes[:, 1]
            qq1 = total_boxes[:, 0] + total_boxes[:, 5] * regw
            qq2 = total_boxes[:, 1] + total_boxes[:, 6] * regh
            qq3 = total_boxes[:, 2] + total_boxes[:, 7] * regw
            qq4 = total_boxes[:, 3] + total_boxes[:, 8] * regh
            total_boxes = torch.stack([qq1, qq2, qq3, qq4, total_boxes[:, 4]]).permute(1, 0)
            total_boxes = rerec(total_boxes)
            total_boxes[:, 0:4] = total_boxes[:, 0:4]
            dy, edy, dx, edx, y, ey, x, ex, tmpw, tmph = pad(total_boxes, w, h)
            batch_boxes.append(torch.stack([y, ey, x, ex], dim=1))
        else:
            batch_boxes.append(total_boxes[:, :4].int())

    return batch_boxes


detect = torch.compile(detect_proposals)


def make():
    torch.manual_seed(0)
    pnet = PNet().eval()
    imgs = torch.rand(2, 3, 40, 48) * 255
    return detect_proposals, [
        (imgs, 20, pnet, [0.5, 0.7, 0.7], 0.709),
        (imgs, 20, pnet, [0.999, 0.7, 0.7], 0.709),
    ]
