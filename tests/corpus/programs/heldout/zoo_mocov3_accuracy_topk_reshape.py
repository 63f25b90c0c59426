"""MoCo v3 linear-probe accuracy: `accuracy` takes the top-k predictions of the classifier logits under `no_grad`, compares them with the targets and loops over `topk` slicing `correct[:k]` and scaling by `100.0 / batch_size`.

Source: facebookresearch/moco-v3@c349e6e24f40d3fedb22d973f92defa4cedf37a7:main_lincls.py:506-520
Also: main_lincls.py:365,409 (train/validate call `acc1, acc5 = accuracy(output, target, topk=(1, 5))`).
Kept: accuracy verbatim.
Simplified: the logits come straight from make() (batch 6, 8 classes)
instead of the linear-probe ViT; the helper is compiled with the decorator.
"""
import torch


@torch.compile
def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def make():
    torch.manual_seed(0)
    output = torch.randn(6, 8)
    target = torch.arange(6, dtype=torch.long)
    return accuracy._torchdynamo_orig_callable, [
        (output, target, (1, 5)),
        (output, target),
    ]
