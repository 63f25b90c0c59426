"""PatchTST self-supervised pretraining: PatchMaskCB patches the batch (`create_patch`), masks patches with `random_masking` (argsort of torch.rand noise, gather, `mask[:, :len_keep, :] = 0`), and the masked MSE divides by `self.mask.sum()`.

Source: yuqinie98/PatchTST@284d522f1f11c7e68e5a5e023f3ff282aa819fc4:PatchTST_self_supervised/src/callback/patch_mask.py:28-143
Kept: PatchMaskCB.patch_masking and _loss, create_patch and random_masking verbatim
(including the mask.bool() round trip).
Simplified: the Learner/callback machinery is a small object that holds xb/yb the way
the learner does; the PatchTST encoder is a per-patch linear reconstruction head;
compiled as one pretraining step; seq_len 24, patch_len 6, stride 6 or 4, 3 variables.
"""
import torch
from torch import nn


class Learner:
    def __init__(self, model):
        self.model = model
        self.xb = None
        self.yb = None
        self.loss_func = None


class Callback:
    learner = None

    @property
    def xb(self):
        return self.learner.xb


class PatchMaskCB(Callback):
    def __init__(self, patch_len, stride, mask_ratio,
                 mask_when_pred: bool = False):
        """
        Callback used to perform the pretext task of reconstruct the original data after a binary mask has been applied.
        """
        self.patch_len = patch_len
        self.stride = stride
        self.mask_ratio = mask_ratio

    def before_fit(self):
        # overwrite the predefined loss function
        self.learner.loss_func = self._loss

    def before_forward(self): self.patch_masking()

    def patch_masking(self):
        """
        xb: [bs x seq_len x n_vars] -> [bs x num_patch x n_vars x patch_len]
        """
        xb_patch, num_patch = create_patch(self.xb, self.patch_len, self.stride)    # xb_patch: [bs x num_patch x n_vars x patch_len]
        xb_mask, _, self.mask, _ = random_masking(xb_patch, self.mask_ratio)   # xb_mask: [bs x num_patch x n_vars x patch_len]
        self.mask = self.mask.bool()    # mask: [bs x num_patch x n_vars]
        self.learner.xb = xb_mask       # learner.xb: masked 4D tensor
        self.learner.yb = xb_patch      # learner.yb: non-masked 4d tensor

    def _loss(self, preds, target):
        """
        preds:   [bs x num_patch x n_vars x patch_len]
        targets: [bs x num_patch x n_vars x patch_len]
        """
        loss = (preds - target) ** 2
        loss = loss.mean(dim=-1)
        loss = (loss * self.mask).sum() / self.mask.sum()
        return loss


def create_patch(xb, patch_len, stride):
    """
    xb: [bs x seq_len x n_vars]
    """
    seq_len = xb.shape[1]
    num_patch = (max(seq_len, patch_len) - patch_len) // stride + 1
    tgt_len = patch_len + stride * (num_patch - 1)
    s_begin = seq_len - tgt_len

    xb = xb[:, s_begin:, :]                                                    # xb: [bs x tgt_len x nvars]
    xb = xb.unfold(dimension=1, size=patch_len, step=stride)                 # xb: [bs x num_patch x n_vars x patch_len]
    return xb, num_patch


def random_masking(xb, mask_ratio):
    # xb: [bs x num_patch x n_vars x patch_len]
    bs, L, nvars, D = xb.shape
    x = xb.clone()

    len_keep = int(L * (1 - mask_ratio))

    noise = torch.rand(bs, L, nvars, device=xb.device)  # noise in [0, 1], bs x L x nvars

    # sort noise for each sample
    ids_shuffle = torch.argsort(noise, dim=1)  # ascend: small is keep, large is remove
    ids_restore = torch.argsort(ids_shuffle, dim=1)                                     # ids_restore: [bs x L x nvars]

    # keep the first subset
    ids_keep = ids_shuffle[:, :len_keep, :]                                              # ids_keep: [bs x len_keep x nvars]
    x_kept = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, 1, D))     # x_kept: [bs x len_keep x nvars  x patch_len]

    # removed x
    x_removed = torch.zeros(bs, L - len_keep, nvars, D, device=xb.device)                 # x_removed: [bs x (L-len_keep) x nvars x patch_len]
    x_ = torch.cat([x_kept, x_removed], dim=1)                                          # x_: [bs x L x nvars x patch_len]

    # combine the kept part and the removed one
    x_masked = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, 1, D))  # x_masked: [bs x num_patch x nvars x patch_len]

    # generate the binary mask: 0 is keep, 1 is remove
    mask = torch.ones([bs, L, nvars], device=x.device)                                  # mask: [bs x num_patch x nvars]
    mask[:, :len_keep, :] = 0
    # unshuffle to get the binary mask
    mask = torch.gather(mask, dim=1, index=ids_restore)                                  # [bs x num_patch x nvars]
    return x_masked, x_kept, mask, ids_restore


class PatchReconstruction(nn.Module):
    def __init__(self, patch_len, d_model=16):
        super().__init__()
        self.W_P = nn.Linear(patch_len, d_model)
        self.head = nn.Linear(d_model, patch_len)

    def forward(self, z):
        return self.head(torch.relu(self.W_P(z)))


def pretrain_step(cb, xb):
    cb.learner.xb = xb
    cb.before_forward()
    pred = cb.learner.model(cb.learner.xb)
    return cb.learner.loss_func(pred, cb.learner.yb)


compiled_step = torch.compile(pretrain_step)


def build_cb(patch_len, stride, mask_ratio=0.4):
    cb = PatchMaskCB(patch_len, stride, mask_ratio)
    cb.learner = Learner(PatchReconstruction(patch_len))
    cb.before_fit()
    return cb


def make():
    torch.manual_seed(0)
    xb = torch.randn(2, 24, 3)
    return pretrain_step, [
        (build_cb(6, 6), xb),
        (build_cb(6, 4, 0.5), xb),
    ]
