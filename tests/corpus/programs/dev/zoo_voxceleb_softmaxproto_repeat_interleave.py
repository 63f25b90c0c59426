"""VoxCeleb trainer Softmax+AngleProto loss: a softmax classifier on the flattened pair of utterances with labels `repeat_interleave`d by 2, plus the angular prototypical term (anchor = mean of the other utterances, learnable scale/bias, `torch.arange` labels).

Source: clovaai/voxceleb_trainer@f51bab870672a9b0b50fa158b4e30f329e7866d7:loss/softmaxproto.py:1-27
Also: loss/softmax.py:1-24, loss/angleproto.py:1-36, utils.py:5-18 (accuracy).
Kept: the three LossFunction classes verbatim (as Softmax / AngleProto /
SoftmaxProto; the originals are three modules each named LossFunction), the
constructor prints, `**kwargs` plumbing, the discarded `torch.clamp(self.w, 1e-6)`.
Simplified: nOut 8, nClasses 6, 5 speakers x 2 utterances passed in directly.
"""
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


class Softmax(nn.Module):
    def __init__(self, nOut, nClasses, **kwargs):
        super().__init__()

        self.test_normalize = True

        self.criterion  = torch.nn.CrossEntropyLoss()
        self.fc         = nn.Linear(nOut,nClasses)

        print('Initialised Softmax Loss')

    def forward(self, x, label=None):

        x       = self.fc(x)
        nloss   = self.criterion(x, label)
        prec1   = accuracy(x.detach(), label.detach(), topk=(1,))[0]

        return nloss, prec1


class AngleProto(nn.Module):

    def __init__(self, init_w=10.0, init_b=-5.0, **kwargs):
        super().__init__()

        self.test_normalize = True
        
        self.w = nn.Parameter(torch.tensor(init_w))
        self.b = nn.Parameter(torch.tensor(init_b))
        self.criterion  = torch.nn.CrossEntropyLoss()

        print('Initialised AngleProto')

    def forward(self, x, label=None):

        assert x.size()[1] >= 2

        out_anchor      = torch.mean(x[:,1:,:],1)
        out_positive    = x[:,0,:]
        stepsize        = out_anchor.size()[0]

        cos_sim_matrix  = F.cosine_similarity(out_positive.unsqueeze(-1),out_anchor.unsqueeze(-1).transpose(0,2))
        torch.clamp(self.w, 1e-6)
        cos_sim_matrix = cos_sim_matrix * self.w + self.b
        
        label   = torch.arange(stepsize, device=x.device)
        nloss   = self.criterion(cos_sim_matrix, label)
        prec1   = accuracy(cos_sim_matrix.detach(), label.detach(), topk=(1,))[0]

        return nloss, prec1


class SoftmaxProto(nn.Module):

    def __init__(self, **kwargs):
        super().__init__()

        self.test_normalize = True

        self.softmax = Softmax(**kwargs)
        self.angleproto = AngleProto(**kwargs)

        print('Initialised SoftmaxPrototypical Loss')

    def forward(self, x, label=None):

        assert x.size()[1] == 2

        nlossS, prec1   = self.softmax(x.reshape(-1,x.size()[-1]), label.repeat_interleave(2))

        nlossP, _       = self.angleproto(x,None)

        return nlossS+nlossP, prec1


def build_loss(**kwargs):
    loss = SoftmaxProto(**kwargs)
    loss.compile()
    return loss


def make():
    torch.manual_seed(0)
    x = torch.randn(5, 2, 8, requires_grad=True)
    label = torch.tensor([0, 2, 5, 1, 3])
    return SoftmaxProto(nOut=8, nClasses=6), [(x, label)]
