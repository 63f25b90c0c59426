"""Binary Lovasz hinge, per image: a generator over `zip(logits, labels)` fed to the `mean` helper (iter/next/enumerate), `flatten_binary_scores` with `ignore=None`, and `lovasz_hinge_flat`'s `if len(labels) == 0` guard.

Source: bermanmaxim/LovaszSoftmax@188332eb284aa492d1c713c30a051d3f13ec2e6b:pytorch/lovasz_losses.py:17-30,75-125,208-227
Kept: lovasz_grad, lovasz_hinge, lovasz_hinge_flat, flatten_binary_scores and
the `mean` helper verbatim (the `Variable` wrappers are identity functions in
current torch).
Simplified: compiled as a plain function with torch.compile(dynamic=False), the
way a training script wraps its loss; 2 images of 4x4.
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


def lovasz_hinge(logits, labels, per_image=True, ignore=None):
    if per_image:
        loss = mean(lovasz_hinge_flat(*flatten_binary_scores(log.unsqueeze(0), lab.unsqueeze(0), ignore))
                          for log, lab in zip(logits, labels))
    else:
        loss = lovasz_hinge_flat(*flatten_binary_scores(logits, labels, ignore))
    return loss


def lovasz_hinge_flat(logits, labels):
    if len(labels) == 0:
        # only void pixels, the gradients should be 0
        return logits.sum() * 0.
    signs = 2. * labels.float() - 1.
    errors = (1. - logits * Variable(signs))
    errors_sorted, perm = torch.sort(errors, dim=0, descending=True)
    perm = perm.data
    gt_sorted = labels[perm]
    grad = lovasz_grad(gt_sorted)
    loss = torch.dot(F.relu(errors_sorted), Variable(grad))
    return loss


def flatten_binary_scores(scores, labels, ignore=None):
    """
    Flattens predictions in the batch (binary case)
    Remove labels equal to 'ignore'
    """
    scores = scores.view(-1)
    labels = labels.view(-1)
    if ignore is None:
        return scores, labels
    valid = (labels != ignore)
    vscores = scores[valid]
    vlabels = labels[valid]
    return vscores, vlabels


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


def compute_loss(logits, labels):
    return lovasz_hinge(logits, labels, per_image=True)


loss_fn = torch.compile(compute_loss, dynamic=False)


def make():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 4)
    labels = (torch.rand(2, 4, 4) > 0.5).long()
    return compute_loss, [(logits, labels), (logits[:1], labels[:1])]
