"""VoxCeleb trainer GE2E loss: per utterance slot a Python list of indices drops `ii` to form exclusive centroids, the diagonal of the cosine-similarity matrix is overwritten through `cos_sim[range(..), range(..)] = ...`, and labels are expanded with `torch.repeat_interleave`.

Source: clovaai/voxceleb_trainer@f51bab870672a9b0b50fa158b4e30f329e7866d7:loss/ge2e.py:1-50
Also: utils.py:5-18 (accuracy).
Kept: LossFunction verbatim (the constructor print, the discarded
`torch.clamp(self.w, 1e-6)`, the `(nloss, prec1)` return), accuracy verbatim.
Simplified: 4 speakers x 3 utterances of 8-dim embeddings (nPerSpeaker 3),
passed in directly instead of through SpeakerNet's reshape.
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


class LossFunction(nn.Module):

    def __init__(self, init_w=10.0, init_b=-5.0, **kwargs):
        super().__init__()

        self.test_normalize = True
        
        self.w = nn.Parameter(torch.tensor(init_w))
        self.b = nn.Parameter(torch.tensor(init_b))
        self.criterion  = torch.nn.CrossEntropyLoss()

        print('Initialised GE2E')

    def forward(self, x, label=None):

        assert x.size()[1] >= 2

        gsize = x.size()[1]
        centroids = torch.mean(x, 1)
        stepsize = x.size()[0]

        cos_sim_matrix = []

        for ii in range(0,gsize): 
            idx = [*range(0,gsize)]
            idx.remove(ii)
            exc_centroids = torch.mean(x[:,idx,:], 1)
            cos_sim_diag    = F.cosine_similarity(x[:,ii,:],exc_centroids)
            cos_sim         = F.cosine_similarity(x[:,ii,:].unsqueeze(-1),centroids.unsqueeze(-1).transpose(0,2))
            cos_sim[range(0,stepsize),range(0,stepsize)] = cos_sim_diag
            cos_sim_matrix.append(torch.clamp(cos_sim,1e-6))

        cos_sim_matrix = torch.stack(cos_sim_matrix,dim=1)

        torch.clamp(self.w, 1e-6)
        cos_sim_matrix = cos_sim_matrix * self.w + self.b
        
        label = torch.arange(stepsize, device=x.device)
        nloss = self.criterion(cos_sim_matrix.view(-1,stepsize), torch.repeat_interleave(label,repeats=gsize,dim=0))
        prec1 = accuracy(cos_sim_matrix.view(-1,stepsize).detach(), torch.repeat_interleave(label,repeats=gsize,dim=0).detach(), topk=(1,))[0]

        return nloss, prec1


def get_loss(**kwargs):
    return torch.compile(LossFunction(**kwargs))


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 8, requires_grad=True)
    label = torch.arange(4)
    return LossFunction(), [(x, label)]
