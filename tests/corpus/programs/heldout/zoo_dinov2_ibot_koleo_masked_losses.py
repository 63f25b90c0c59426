"""DINOv2 training losses: KoLeo on CLS tokens under `torch.cuda.amp.autocast(enabled=False)`, iBOT masked patch loss with a centered teacher.

Source: facebookresearch/dinov2@b8931f7bf91576930313be2c6d6af376033b35f0:dinov2/loss/ibot_patch_loss.py:1-151
Also: dinov2/loss/koleo_loss.py:1-48, dinov2/train/ssl_meta_arch.py:199-211,313-340
(the centering, KoLeo and iBOT steps of forward_backward)
Kept: the xformers-or-fallback `lossfunc`, iBOTPatchLoss (softmax_center_teacher
with its deferred center update, forward_masked building `masks_weight` from a
boolean mask when none is given, the `n_masked_patches` slice, update_center /
reduce_center_update / apply_center_update with the `dist.is_initialized()`
checks) and KoLeoLoss verbatim; the loss accumulation of forward_backward.
Simplified: one process (no all_reduce happens), no DINO head or teachers'
backbones (the head outputs come in), 4 CLS tokens, 2 images of 6 patches,
prototype dim 8.
"""
import logging

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger("dinov2")


try:
    from xformers.ops import cross_entropy

    def lossfunc(t, s, temp):
        s = s.float()
        t = t.float()
        if s.ndim == 2:
            return -cross_entropy(s.unsqueeze(0), t.unsqueeze(0), temp, bw_inplace=True).squeeze(0)
        elif s.ndim == 3:
            return -cross_entropy(s, t, temp, bw_inplace=True)

except ImportError:

    def lossfunc(t, s, temp):
        return torch.sum(t * F.log_softmax(s / temp, dim=-1), dim=-1)


class KoLeoLoss(nn.Module):
    """Kozachenko-Leonenko entropic loss regularizer from Sablayrolles et al. - 2018 - Spreading vectors for similarity search"""

    def __init__(self):
        super().__init__()
        self.pdist = nn.PairwiseDistance(2, eps=1e-8)

    def pairwise_NNs_inner(self, x):
        """
        Pairwise nearest neighbors for L2-normalized vectors.
        Uses Torch rather than Faiss to remain on GPU.
        """
        # parwise dot products (= inverse distance)
        dots = torch.mm(x, x.t())
        n = x.shape[0]
        dots.view(-1)[:: (n + 1)].fill_(-1)  # Trick to fill diagonal with -1
        # max inner prod -> min distance
        _, I = torch.max(dots, dim=1)  # noqa: E741
        return I

    def forward(self, student_output, eps=1e-8):
        """
        Args:
            student_output (BxD): backbone output of student
        """
        with torch.cuda.amp.autocast(enabled=False):
            student_output = F.normalize(student_output, eps=eps, p=2, dim=-1)
            I = self.pairwise_NNs_inner(student_output)  # noqa: E741
            distances = self.pdist(student_output, student_output[I])  # BxD, BxD -> B
            loss = -torch.log(distances + eps).mean()
        return loss


class iBOTPatchLoss(nn.Module):
    def __init__(self, patch_out_dim, student_temp=0.1, center_momentum=0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, 1, patch_out_dim))
        self.updated = True
        self.reduce_handle = None
        self.len_teacher_patch_tokens = None
        self.async_batch_center = None

    @torch.no_grad()
    def softmax_center_teacher(self, teacher_patch_tokens, teacher_temp):
        self.apply_center_update()
        # teacher centering and sharpening
        #
        # WARNING:
        #   as self.center is a float32, everything gets casted to float32 afterwards
        return F.softmax((teacher_patch_tokens - self.center) / teacher_temp, dim=-1)

    def forward_masked(
        self,
        student_patch_tokens_masked,
        teacher_patch_tokens_masked,
        student_masks_flat,
        n_masked_patches=None,
        masks_weight=None,
    ):
        t = teacher_patch_tokens_masked
        s = student_patch_tokens_masked
        # loss = torch.sum(t * F.log_softmax(s / self.student_temp, dim=-1), dim=-1)
        loss = lossfunc(t, s, self.student_temp)
        if masks_weight is None:
            masks_weight = (
                (1 / student_masks_flat.sum(-1).clamp(min=1.0))
                .unsqueeze(-1)
                .expand_as(student_masks_flat)[student_masks_flat]
            )
        if n_masked_patches is not None:
            loss = loss[:n_masked_patches]
        loss = loss * masks_weight
        return -loss.sum() / student_masks_flat.shape[0]

    @torch.no_grad()
    def update_center(self, teacher_patch_tokens):
        self.reduce_center_update(teacher_patch_tokens)

    @torch.no_grad()
    def reduce_center_update(self, teacher_patch_tokens):
        self.updated = False
        self.len_teacher_patch_tokens = len(teacher_patch_tokens)
        self.async_batch_center = torch.sum(teacher_patch_tokens.mean(1), dim=0, keepdim=True)
        if dist.is_initialized():
            self.reduce_handle = dist.all_reduce(self.async_batch_center, async_op=True)

    @torch.no_grad()
    def apply_center_update(self):
        if self.updated is False:
            world_size = dist.get_world_size() if dist.is_initialized() else 1

            if self.reduce_handle is not None:
                self.reduce_handle.wait()
            _t = self.async_batch_center / (self.len_teacher_patch_tokens * world_size)

            self.center = self.center * self.center_momentum + _t * (1 - self.center_momentum)

            self.updated = True


class SSLLosses(nn.Module):
    """The KoLeo and iBOT part of SSLMetaArch.forward_backward, on head outputs."""

    def __init__(self, ibot_out_dim=8, koleo_loss_weight=0.1, ibot_loss_weight=1.0):
        super().__init__()
        self.do_koleo = koleo_loss_weight > 0
        self.koleo_loss_weight = koleo_loss_weight
        self.ibot_loss_weight = ibot_loss_weight
        self.koleo_loss = KoLeoLoss()
        self.ibot_patch_loss = iBOTPatchLoss(ibot_out_dim)

    def forward(
        self,
        student_cls_tokens,
        student_global_masked_patch_tokens_after_head,
        masked_teacher_patch_tokens_after_head,
        masks,
        n_masked_patches=None,
        masks_weight=None,
        teacher_temp=0.07,
    ):
        loss_dict = {}
        loss_accumulator = 0
        loss_scales = 2
        ibot_loss_scale = 1.0 / 2

        masked_teacher_patch_tokens_after_head = masked_teacher_patch_tokens_after_head.unsqueeze(0)
        masked_teacher_ibot_softmaxed_centered = self.ibot_patch_loss.softmax_center_teacher(
            masked_teacher_patch_tokens_after_head[:, :n_masked_patches], teacher_temp=teacher_temp
        )
        masked_teacher_ibot_softmaxed_centered = masked_teacher_ibot_softmaxed_centered.squeeze(0)
        self.ibot_patch_loss.update_center(masked_teacher_patch_tokens_after_head[:n_masked_patches])

        if self.do_koleo:
            koleo_loss = self.koleo_loss_weight * sum(
                self.koleo_loss(p) for p in student_cls_tokens.chunk(2)
            )  # we don't apply koleo loss between cls tokens of a same image
            loss_accumulator += koleo_loss
            loss_dict["koleo_loss"] = (
                koleo_loss / loss_scales
            )  # this is to display the same losses as before but we can remove eventually

        # compute loss
        ibot_patch_loss = (
            self.ibot_patch_loss.forward_masked(
                student_global_masked_patch_tokens_after_head,
                masked_teacher_ibot_softmaxed_centered,
                student_masks_flat=masks,
                n_masked_patches=n_masked_patches,
                masks_weight=masks_weight,
            )
            * loss_scales
            * ibot_loss_scale
        )

        # store for display
        loss_dict["ibot_loss"] = ibot_patch_loss / 2

        # accumulate loss
        loss_accumulator += self.ibot_loss_weight * ibot_patch_loss
        return loss_accumulator, loss_dict


def build_losses(cfg_koleo_loss_weight=0.1):
    return torch.compile(SSLLosses(koleo_loss_weight=cfg_koleo_loss_weight))


def make():
    torch.manual_seed(0)
    losses = SSLLosses()
    losses.ibot_patch_loss.update_center(torch.randn(1, 4, 8))  # the previous iteration left a pending center update
    masks = torch.zeros(2, 6, dtype=torch.bool)
    masks[0, :3] = True
    masks[1, 2:4] = True
    n_masked = int(masks.sum())
    masks_weight = (1 / masks.sum(-1).clamp(min=1.0)).unsqueeze(-1).expand_as(masks)[masks]
    cls_tokens = torch.randn(4, 8)
    student = torch.randn(n_masked, 8)
    teacher = torch.randn(n_masked, 8)
    return losses, [
        (cls_tokens, student, teacher, masks, n_masked, masks_weight),
        (cls_tokens, student, teacher, masks),
    ]
