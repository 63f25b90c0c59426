"""MAML test-time finetuning: `net = deepcopy(self.net)` of an nn.Module inside the compiled step, then
`torch.autograd.grad` and `.item()` accuracy counting (case 1 of the report: torchbench `maml`).

Source: https://github.com/pytorch/pytorch/issues/115122 (torchbench maml, `Meta.finetunning` from
dragen1860/MAML-Pytorch meta.py)
Kept: the deepcopy of the learner "in order to not ruin the state of running_mean/variance", the inner loss,
`torch.autograd.grad` over the copy's parameters, the fast-weights list, the no_grad query evaluation with
`torch.eq(pred_q, y_qry).sum().item()` accumulated into `corrects`.
Simplified: the learner is a Linear evaluated with `torch.func.functional_call` for the fast weights; one update step.
"""
from copy import deepcopy

import torch
import torch.nn.functional as F
from torch import nn


class Meta(nn.Module):
    def __init__(self, n_way=3, dim=4, update_lr=0.4, update_step_test=1):
        super().__init__()
        self.net = nn.Linear(dim, n_way)
        self.update_lr = update_lr
        self.update_step_test = update_step_test

    def finetunning(self, x_spt, y_spt, x_qry, y_qry):
        assert len(x_spt.shape) == 2
        querysz = x_qry.size(0)
        corrects = [0 for _ in range(self.update_step_test + 1)]

        # in order to not ruin the state of running_mean/variance and bn_weight/bias
        # we finetunning on the copied model instead of self.net
        net = deepcopy(self.net)

        # 1. run the i-th task and compute loss for k=0
        logits = net(x_spt)
        loss = F.cross_entropy(logits, y_spt)
        grad = torch.autograd.grad(loss, net.parameters())
        fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, net.parameters())))

        # this is the loss and accuracy before first update
        with torch.no_grad():
            logits_q = net(x_qry)
            pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
            correct = torch.eq(pred_q, y_qry).sum().item()
            corrects[0] = corrects[0] + correct

        # this is the loss and accuracy after the first update
        with torch.no_grad():
            params = dict(zip(["weight", "bias"], fast_weights))
            logits_q = torch.func.functional_call(net, params, (x_qry,))
            pred_q = F.softmax(logits_q, dim=1).argmax(dim=1)
            correct = torch.eq(pred_q, y_qry).sum().item()
            corrects[1] = corrects[1] + correct

        del net
        accs = [c / querysz for c in corrects]
        return accs


maml = Meta()
compiled_finetune = torch.compile(maml.finetunning)


def make():
    torch.manual_seed(0)
    m = Meta()
    x_spt, y_spt = torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2])
    x_qry, y_qry = torch.randn(3, 4), torch.tensor([0, 1, 2])
    return m.finetunning, [(x_spt, y_spt, x_qry, y_qry)]
