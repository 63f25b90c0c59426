"""PSPNet/PSANet training metric `intersectionAndUnionGPU`: dim/shape asserts, ignore-label masked assignment into the prediction, boolean selection of matching pixels, and three `torch.histc` class histograms.

Source: hszhao/semseg@4f274c3f276778228bc14a4565822d46359f0cc8:util/util.py:55-67
Also: its call in tool/train.py:286 (`intersectionAndUnionGPU(output, target,
args.classes, args.ignore_label)` on `x.max(1)[1]` predictions).
Kept: the function verbatim, compiled on its own with torch.compile.
Simplified: float label maps (histc needs a floating dtype on CPU; on GPU the
original runs on the long `max(1)[1]` tensors), 3 classes, ignore label 255,
N x H x W and flattened inputs.
"""
import torch


@torch.compile
def intersectionAndUnionGPU(output, target, K, ignore_index=255):
    # 'K' classes, output and target sizes are N or N * L or N * H * W, each value in range 0 to K - 1.
    assert (output.dim() in [1, 2, 3])
    assert output.shape == target.shape
    output = output.view(-1)
    target = target.view(-1)
    output[target == ignore_index] = ignore_index
    intersection = output[output == target]
    area_intersection = torch.histc(intersection, bins=K, min=0, max=K-1)
    area_output = torch.histc(output, bins=K, min=0, max=K-1)
    area_target = torch.histc(target, bins=K, min=0, max=K-1)
    area_union = area_output + area_target - area_intersection
    return area_intersection, area_union, area_target


def make():
    torch.manual_seed(0)
    output = torch.randint(0, 3, (2, 9, 9)).float()
    target = torch.randint(0, 3, (2, 9, 9)).float()
    target[:, 0] = 255
    return intersectionAndUnionGPU._torchdynamo_orig_callable, [
        (output.clone(), target, 3, 255),
        (output.clone().view(-1), target.view(-1), 3),
    ]
