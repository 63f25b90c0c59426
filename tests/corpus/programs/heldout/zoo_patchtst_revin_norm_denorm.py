"""PatchTST RevIN: `forward(x, mode)` dispatches on the string mode, `_get_statistics` stores `self.mean`/`self.stdev` (or `self.last`) on the module, and the denorm path reads them back around the backbone.

Source: yuqinie98/PatchTST@81d35cb572141da83983065dd197a99a4a09cb30:PatchTST_supervised/layers/RevIN.py:1-65
Also: PatchTST_supervised/layers/PatchTST_backbone.py (the revin/permute plumbing
around the backbone in PatchTST_backbone.forward).
Kept: RevIN verbatim (affine params, subtract_last, eps*eps in denorm) and the
norm -> backbone -> denorm permutes of PatchTST_backbone.forward.
Simplified: the patching/TST encoder is a linear map from seq_len to pred_len per
channel; seq_len 16, pred_len 4, 3 channels.
"""
import torch
import torch.nn as nn


class RevIN(nn.Module):
    def __init__(self, num_features: int, eps=1e-5, affine=True, subtract_last=False):
        """
        :param num_features: the number of features or channels
        :param eps: a value added for numerical stability
        :param affine: if True, RevIN has learnable affine parameters
        """
        super(RevIN, self).__init__()
        self.num_features = num_features
        self.eps = eps
        self.affine = affine
        self.subtract_last = subtract_last
        if self.affine:
            self._init_params()

    def forward(self, x, mode: str):
        if mode == 'norm':
            self._get_statistics(x)
            x = self._normalize(x)
        elif mode == 'denorm':
            x = self._denormalize(x)
        else: raise NotImplementedError
        return x

    def _init_params(self):
        # initialize RevIN params: (C,)
        self.affine_weight = nn.Parameter(torch.ones(self.num_features))
        self.affine_bias = nn.Parameter(torch.zeros(self.num_features))

    def _get_statistics(self, x):
        dim2reduce = tuple(range(1, x.ndim - 1))
        if self.subtract_last:
            self.last = x[:, -1, :].unsqueeze(1)
        else:
            self.mean = torch.mean(x, dim=dim2reduce, keepdim=True).detach()
        self.stdev = torch.sqrt(torch.var(x, dim=dim2reduce, keepdim=True, unbiased=False) + self.eps).detach()

    def _normalize(self, x):
        if self.subtract_last:
            x = x - self.last
        else:
            x = x - self.mean
        x = x / self.stdev
        if self.affine:
            x = x * self.affine_weight
            x = x + self.affine_bias
        return x

    def _denormalize(self, x):
        if self.affine:
            x = x - self.affine_bias
            x = x / (self.affine_weight + self.eps * self.eps)
        x = x * self.stdev
        if self.subtract_last:
            x = x + self.last
        else:
            x = x + self.mean
        return x


class PatchTST_backbone(nn.Module):
    def __init__(self, c_in, context_window, target_window, revin=True, affine=True, subtract_last=False):
        super().__init__()
        # RevIn
        self.revin = revin
        if self.revin: self.revin_layer = RevIN(c_in, affine=affine, subtract_last=subtract_last)
        self.backbone = nn.Linear(context_window, target_window)

    def forward(self, z):                                                                   # z: [bs x nvars x seq_len]
        # norm
        if self.revin:
            z = z.permute(0, 2, 1)
            z = self.revin_layer(z, 'norm')
            z = z.permute(0, 2, 1)

        z = self.backbone(z)                                                                # z: [bs x nvars x target_window]

        # denorm
        if self.revin:
            z = z.permute(0, 2, 1)
            z = self.revin_layer(z, 'denorm')
            z = z.permute(0, 2, 1)
        return z


class Model(nn.Module):
    def __init__(self, enc_in=3, seq_len=16, pred_len=4, revin=True, affine=True, subtract_last=False):
        super().__init__()
        self.model = PatchTST_backbone(enc_in, seq_len, pred_len, revin=revin, affine=affine, subtract_last=subtract_last)

    def forward(self, x):           # x: [Batch, Input length, Channel]
        x = x.permute(0, 2, 1)    # x: [Batch, Channel, Input length]
        x = self.model(x)
        x = x.permute(0, 2, 1)    # x: [Batch, Input length, Channel]
        return x


model = torch.compile(Model(subtract_last=True))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 16, 3)
    return Model(subtract_last=True), [(x,), (x * 3.0 + 1.0,)]
