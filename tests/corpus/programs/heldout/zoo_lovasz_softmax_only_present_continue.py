"""Lovasz-Softmax loss: `flatten_probas` reads `probas[valid.nonzero().squeeze()]`, and `lovasz_softmax_flat` skips a class with `if only_present and fg.sum() == 0: continue`, then averages with the generator-friendly `mean` helper.

Source: bermanmaxim/LovaszSoftmax@188332eb284aa492d1c713c30a051d3f13ec2e6b:pytorch/lovasz_losses.py:17-30,146-227
Kept: lovasz_grad, lovasz_softmax, lovasz_softmax_flat, flatten_probas and the
`mean`/`isnan` helpers verbatim (including the `Variable` wrappers, which are
identity functions in current torch), and the way segmentation training code
calls it: a criterion module holding `only_present`/`ignore` and applying
softmax to the logits first.
Simplified: the criterion module is a small stand-in for the callers' loss
wrappers; 3 classes on 4x4 images.
"""
from itertools import filterfalse as ifilterfalse

import torch
import torch.nn.functional as F
from torch.autograd import Variable


def lovasz_grad(gt_sorted):
    """
    Computes gradient of the Lovasz extension w.r.t sorted errors
    See Alg. 1 in paper
    """
    p = len(gt_sorted)
    gts = gt_sorted.sum()
    intersection = gts - gt_sorted.float().cumsum(0)
    union = gts + (1 - gt_sorted).float().cumsum(0)
    jaccard = 1. - intersection / union
    if p > 1: # cover 1-pixel case
        jaccard[1:p] = jaccard[1:p] - jaccard[0:-1]
    return jaccard


def lovasz_softmax(probas, labels, only_present=False, per_image=False, ignore=None):
    if per_image:
        loss = mean(lovasz_softmax_flat(*flatten_probas(prob.unsqueeze(0), lab.unsqueeze(0), ignore), only_present=only_present)
                          for prob, lab in zip(probas, labels))
    else:
        loss = lovasz_softmax_flat(*flatten_probas(probas, labels, ignore), only_present=only_present)
    return loss


def lovasz_softmax_flat(probas, labels, only_present=False):
    if probas.numel() == 0:
        # only void pixels, the gradients should be 0
        return probas * 0.
    C = probas.size(1)

    losses = []
    for c in range(C):
        fg = (labels == c).float() # foreground for class c
        if only_present and fg.sum() == 0:
            continue
        errors = (Variable(fg) - probas[:, c]).abs()
        errors_sorted, perm = torch.sort(errors, 0, descending=True)
        perm = perm.data
        fg_sorted = fg[perm]
        losses.append(torch.dot(errors_sorted, Variable(lovasz_grad(fg_sorted))))
    return mean(losses)


def flatten_probas(probas, labels, ignore=None):
    """
    Flattens predictions in the batch
    """
    B, C, H, W = probas.size()
    probas = probas.permute(0, 2, 3, 1).contiguous().view(-1, C)  # B * H * W, C = P, C
    labels = labels.view(-1)
    if ignore is None:
        return probas, labels
    valid = (labels != ignore)
    vprobas = probas[valid.nonzero().squeeze()]
    vlabels = labels[valid]
    return vprobas, vlabels


def isnan(x):
    return x != x


def mean(l, ignore_nan=False, empty=0):
    """
    nanmean compatible with generators.
    """
    l = iter(l)
    if ignore_nan:
        l = ifilterfalse(isnan, l)
    try:
        n = 1
        acc = next(l)
    except StopIteration:
        if empty == 'raise':
            raise ValueError('Empty mean')
        return empty
    for n, v in enumerate(l, 2):
        acc += v
    if n == 1:
        return acc
    return acc / n


class LovaszSoftmaxLoss(torch.nn.Module):
    def __init__(self, only_present=True, per_image=False, ignore=255):
        super().__init__()
        self.only_present = only_present
        self.per_image = per_image
        self.ignore = ignore

    def forward(self, logits, labels):
        probas = F.softmax(logits, dim=1)
        return lovasz_softmax(probas, labels, only_present=self.only_present,
                              per_image=self.per_image, ignore=self.ignore)


criterion = torch.compile(LovaszSoftmaxLoss(only_present=True, ignore=255))


def make():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 4, 4)
    labels = torch.randint(0, 2, (2, 4, 4))  # class 2 absent: `continue`
    labels[0, 0, :2] = 255
    labels_all = labels.clone()
    labels_all[1, 3, 3] = 2  # every class present
    return LovaszSoftmaxLoss(only_present=True, ignore=255), [(logits, labels), (logits, labels_all)]
