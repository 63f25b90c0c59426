"""VoxCeleb trainer AAM-softmax loss: shape asserts, additive angular margin via `torch.where`, an in-place `scatter_` one-hot, cross-entropy and a top-k `accuracy` helper that builds a list of precisions.

Source: clovaai/voxceleb_trainer@f51bab870672a9b0b50fa158b4e30f329e7866d7:loss/aamsoftmax.py:1-56
Also: utils.py:5-18 (accuracy); defaults from trainSpeakerNet.py:60-63,87
(margin 0.1, scale 30).
Kept: LossFunction verbatim (the constructor print, both easy_margin
branches, `(loss, prec1)` return), accuracy verbatim.
Simplified: nOut 16, nClasses 10; SpeakerNet feeds it the reshaped speaker
embeddings, here passed in directly.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def accuracy(output, target, topk=(1,)):
    """Computes the precision@k for the specified values of k"""
    maxk = max(topk)
    batch_size = target.size(0)

    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))

    res = []
    for k in topk:
        correct_k = correct[:k].view(-1).float().sum(0, keepdim=True)
        res.append(correct_k.mul_(100.0 / batch_size))
    return res


class LossFunction(nn.Module):
    def __init__(self, nOut, nClasses, margin=0.3, scale=15, easy_margin=False, **kwargs):
        super().__init__()

        self.test_normalize = True
        
        self.m = margin
        self.s = scale
        self.in_feats = nOut
        self.weight = torch.nn.Parameter(torch.FloatTensor(nClasses, nOut), requires_grad=True)
        self.ce = nn.CrossEntropyLoss()
        nn.init.xavier_normal_(self.weight, gain=1)

        self.easy_margin = easy_margin
        self.cos_m = math.cos(self.m)
        self.sin_m = math.sin(self.m)

        # make the function cos(theta+m) monotonic decreasing while theta in [0°,180°]
        self.th = math.cos(math.pi - self.m)
        self.mm = math.sin(math.pi - self.m) * self.m

        print(f'Initialised AAMSoftmax margin {self.m:.3f} scale {self.s:.3f}')

    def forward(self, x, label=None):

        assert x.size()[0] == label.size()[0]
        assert x.size()[1] == self.in_feats
        
        # cos(theta)
        cosine = F.linear(F.normalize(x), F.normalize(self.weight))
        # cos(theta + m)
        sine = torch.sqrt((1.0 - torch.mul(cosine, cosine)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m

        if self.easy_margin:
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            phi = torch.where((cosine - self.th) > 0, phi, cosine - self.mm)

        #one_hot = torch.zeros(cosine.size(), device='cuda' if torch.cuda.is_available() else 'cpu')
        one_hot = torch.zeros_like(cosine)
        one_hot.scatter_(1, label.view(-1, 1), 1)
        output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
        output = output * self.s

        loss    = self.ce(output, label)
        prec1   = accuracy(output.detach(), label.detach(), topk=(1,))[0]
        return loss, prec1


criterion = torch.compile(LossFunction(nOut=16, nClasses=10, margin=0.1, scale=30))


def make():
    torch.manual_seed(0)
    loss_fn = LossFunction(nOut=16, nClasses=10, margin=0.1, scale=30)
    embeddings = torch.randn(6, 16, requires_grad=True)
    label = torch.tensor([0, 3, 3, 7, 9, 1])
    return loss_fn, [(embeddings, label)]
