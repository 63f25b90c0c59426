"""face-alignment FaceAlignment landmark step: FAN heatmaps (plus the flipped pass), argmax decoded with `apply_`, quarter-pixel refinement in a per-landmark loop over `int(preds[i, j, 0])` with a `torch.FloatTensor` of heatmap differences, and the inverse crop transform per landmark.

Source: 1adrianb/face-alignment@1b0dd210d616667322c93297a173b00cec45f4a0:face_alignment/utils.py:138-176
Also: face_alignment/utils.py (transform, shuffle_lr, flip);
face_alignment/api.py:140-160 (get_landmarks_from_image, the per-face part).
Kept: get_preds_fromhm, transform, shuffle_lr and flip verbatim; the per-face body
of get_landmarks_from_image from `out = self.face_alignment_net(inp)[-1].detach()`
through `pts.view(68, 2) * 4`.
Simplified: the face detector and the image crop are not part of the program (the
64x64 crop, its center and scale arrive as inputs); FAN is a two-stack stand-in of
strided convs that returns a list of 68-channel 64x64 heatmaps; no 3D depth net.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def transform(point, center, scale, resolution, invert=False):
    """Generate and affine transformation matrix.

    Given a set of points, a center, a scale and a targer resolution, the
    function generates and affine transformation matrix. If invert is ``True``
    it will produce the inverse transformation.
    """
    _pt = torch.ones(3)
    _pt[0] = point[0]
    _pt[1] = point[1]

    h = 200.0 * scale
    t = torch.eye(3)
    t[0, 0] = resolution / h
    t[1, 1] = resolution / h
    t[0, 2] = resolution * (-center[0] / h + 0.5)
    t[1, 2] = resolution * (-center[1] / h + 0.5)

    if invert:
        t = torch.inverse(t)

    new_point = (torch.matmul(t, _pt))[0:2]

    return new_point.int()


def get_preds_fromhm(hm, center=None, scale=None):
    """Obtain (x,y) coordinates given a set of N heatmaps. If the center
    and the scale is provided the function will return the points also in
    the original coordinate frame.

    Arguments:
        hm {torch.tensor} -- the predicted heatmaps, of shape [B, N, W, H]

    Keyword Arguments:
        center {torch.tensor} -- the center of the bounding box (default: {None})
        scale {float} -- face scale (default: {None})
    """
    max, idx = torch.max(
        hm.view(hm.size(0), hm.size(1), hm.size(2) * hm.size(3)), 2)
    idx += 1
    preds = idx.view(idx.size(0), idx.size(1), 1).repeat(1, 1, 2).float()
    preds[..., 0].apply_(lambda x: (x - 1) % hm.size(3) + 1)
    preds[..., 1].add_(-1).div_(hm.size(2)).floor_().add_(1)

    for i in range(preds.size(0)):
        for j in range(preds.size(1)):
            hm_ = hm[i, j, :]
            pX, pY = int(preds[i, j, 0]) - 1, int(preds[i, j, 1]) - 1
            if pX > 0 and pX < 63 and pY > 0 and pY < 63:
                diff = torch.FloatTensor(
                    [hm_[pY, pX + 1] - hm_[pY, pX - 1],
                     hm_[pY + 1, pX] - hm_[pY - 1, pX]])
                preds[i, j].add_(diff.sign_().mul_(.25))

    preds.add_(-.5)

    preds_orig = torch.zeros(preds.size())
    if center is not None and scale is not None:
        for i in range(hm.size(0)):
            for j in range(hm.size(1)):
                preds_orig[i, j] = transform(
                    preds[i, j], center, scale, hm.size(2), True)

    return preds, preds_orig


def shuffle_lr(parts, pairs=None):
    """Shuffle the points left-right according to the axis of symmetry
    of the object.
    """
    if pairs is None:
        pairs = [16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
                 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 27, 28, 29, 30, 35,
                 34, 33, 32, 31, 45, 44, 43, 42, 47, 46, 39, 38, 37, 36, 41,
                 40, 54, 53, 52, 51, 50, 49, 48, 59, 58, 57, 56, 55, 64, 63,
                 62, 61, 60, 67, 66, 65]
    if parts.ndimension() == 3:
        parts = parts[pairs, ...]
    else:
        parts = parts[:, pairs, ...]

    return parts


def flip(tensor, is_label=False):
    """Flip an image or a set of heatmaps left-right
    """
    if not torch.is_tensor(tensor):
        tensor = torch.from_numpy(tensor)

    if is_label:
        tensor = shuffle_lr(tensor).flip(tensor.ndimension() - 1)
    else:
        tensor = tensor.flip(tensor.ndimension() - 1)

    return tensor


class FAN(nn.Module):
    """Stand-in for the stacked-hourglass FAN: a list of heatmaps, one per stack."""

    def __init__(self, num_modules=2):
        super().__init__()
        self.num_modules = num_modules
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.stacks = nn.ModuleList([nn.Conv2d(16, 16, 3, padding=1) for _ in range(num_modules)])
        self.heads = nn.ModuleList([nn.Conv2d(16, 68, 1) for _ in range(num_modules)])

    def forward(self, x):
        x = F.relu(self.stem(x))
        outputs = []
        for i in range(self.num_modules):
            x = F.relu(self.stacks[i](x))
            outputs.append(self.heads[i](x))
        return outputs


class FaceAlignment(nn.Module):
    def __init__(self, flip_input=False):
        super().__init__()
        self.flip_input = flip_input
        self.face_alignment_net = FAN()

    def forward(self, inp, center, scale):
        out = self.face_alignment_net(inp)[-1].detach()
        if self.flip_input:
            out += flip(self.face_alignment_net(flip(inp))
                        [-1].detach(), is_label=True)
        out = out.cpu()

        pts, pts_img = get_preds_fromhm(out, center, scale)
        pts, pts_img = pts.view(68, 2) * 4, pts_img.view(68, 2)
        return pts, pts_img


landmarks = torch.compile(FaceAlignment(flip_input=True).eval())


def make():
    torch.manual_seed(0)
    inp = torch.rand(1, 3, 64, 64)
    center = torch.FloatTensor([120.0, 140.0])
    return FaceAlignment(flip_input=True).eval(), [(inp, center, 1.1), (inp.flip(2), center, 0.9)]
