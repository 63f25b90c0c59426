"""torchaudio HuBERT pre-training head: GradMultiply autograd Function, padding/mask logic, then LogitGenerator's boolean-mask reads `proj_x[mask_m]` and `if neg_is_pos.any()`.

Source: pytorch/audio@v2.11.1:src/torchaudio/models/wav2vec2/model.py:168-223; src/torchaudio/models/wav2vec2/components.py:958-969,1075-1170
Kept: HuBERTPretrainModel.forward after the feature extractor (the
feature_grad_mult check and GradMultiply.apply, features_pen, _get_padding_mask
when lengths are given, the label-length ValueError, mask_m/mask_u with and
without padding), _get_padding_mask, _compute_logits verbatim (index_select,
expand, `(pos == negs).all(-1)`, cosine_similarity, `logits[1:][neg_is_pos] =
-inf` under `if neg_is_pos.any()`), LogitGenerator (skip_masked/skip_nomask,
the four boolean-mask reads) and GradMultiply.
Simplified: the CNN feature extractor, encoder preprocessing, mask generator
and transformer are replaced by one Linear over precomputed features; masks
are inputs; 6 features, 5 classes, final_dim 4.
"""
from typing import Optional, Tuple

import torch
from torch import Tensor
from torch.nn import Module, Parameter


def _get_padding_mask(input: Tensor, lengths: Tensor) -> Tensor:
    batch_size, max_len, _ = input.shape
    mask = torch.arange(max_len, device=lengths.device).expand(batch_size, max_len) >= lengths[:, None]
    return mask


def _compute_logits(
    proj_x: Tensor,
    target: Tensor,
    label_embeddings: Parameter,
) -> Tensor:
    logit_temp = 0.1
    pos = torch.index_select(label_embeddings, 0, target.long())
    negs = label_embeddings.unsqueeze(1).expand(-1, proj_x.size(0), -1)
    neg_is_pos = (pos == negs).all(-1)
    pos = pos.unsqueeze(0)
    targets = torch.cat([pos, negs], dim=0)

    logits = torch.cosine_similarity(proj_x.float(), targets.float(), dim=-1).type_as(proj_x)
    logits /= logit_temp
    if neg_is_pos.any():
        logits[1:][neg_is_pos] = float("-inf")
    logits = logits.transpose(0, 1)  # (num_x, num_cls+1)
    return logits


class LogitGenerator(Module):
    def __init__(
        self,
        encoder_embed_dim: int,
        num_classes: int,
        final_dim: int,
        skip_masked: bool,
        skip_nomask: bool,
    ):
        super().__init__()
        self.label_embeddings = Parameter(torch.FloatTensor(num_classes, final_dim))
        torch.nn.init.uniform_(self.label_embeddings)
        self.final_proj = torch.nn.Linear(encoder_embed_dim, final_dim)
        self.skip_masked = skip_masked
        self.skip_nomask = skip_nomask

    def forward(self, x: Tensor, label: Tensor, mask_m: Tensor, mask_u: Tensor) -> Tuple[Tensor, Tensor]:
        proj_x = self.final_proj(x)
        if self.skip_masked:
            logit_m = None
        else:
            proj_x_m = proj_x[mask_m]
            label_m = label[mask_m]
            logit_m = _compute_logits(proj_x_m, label_m, self.label_embeddings)

        if self.skip_nomask:
            logit_u = None
        else:
            proj_x_u = proj_x[mask_u]
            label_u = label[mask_u]
            logit_u = _compute_logits(proj_x_u, label_u, self.label_embeddings)
        return logit_m, logit_u


class GradMultiply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        res = x.new(x)
        return res

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class HuBERTPretrainHead(Module):
    def __init__(self, feature_grad_mult: Optional[float] = 0.1, skip_masked=False, skip_nomask=False):
        super().__init__()
        self.encoder = torch.nn.Linear(6, 6)
        self.logit_generator = LogitGenerator(6, 5, 4, skip_masked=skip_masked, skip_nomask=skip_nomask)
        self.feature_grad_mult = feature_grad_mult

    def forward(
        self,
        x: Tensor,
        labels: Tensor,
        mask: Tensor,
        lengths: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        if self.feature_grad_mult is not None and self.feature_grad_mult < 1.0:
            x = GradMultiply.apply(x, self.feature_grad_mult)
        features_pen = x.float().pow(2).mean()
        if lengths is not None:
            padding_mask = _get_padding_mask(x, lengths)
        else:
            padding_mask = None
        x = self.encoder(x)
        if x.shape[1] != labels.shape[1]:
            raise ValueError("The length of label must match that of HuBERT model output")
        if padding_mask is not None:
            mask_m = torch.logical_and(~padding_mask, mask)
            mask_u = torch.logical_and(~padding_mask, ~mask_m)
        else:
            mask_m = mask
            mask_u = ~mask_m

        logit_m, logit_u = self.logit_generator(x, labels, mask_m, mask_u)

        return logit_m, logit_u, features_pen


def train(steps=1):
    model = HuBERTPretrainHead()
    compiled = torch.compile(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x, labels = torch.randn(2, 7, 6, requires_grad=True), torch.randint(0, 5, (2, 7))
        mask = torch.rand(2, 7) < 0.5
        logit_m, logit_u, pen = compiled(x, labels, mask)
        loss = logit_m.logsumexp(-1).mean() + pen
        loss.backward()
        optimizer.step()


def make():
    torch.manual_seed(0)
    x, labels = torch.randn(2, 7, 6), torch.randint(0, 5, (2, 7))
    mask = torch.rand(2, 7) < 0.5
    return HuBERTPretrainHead(), [
        (x, labels, mask),
        (x, labels, mask, torch.tensor([7, 4])),
        (x, labels, torch.zeros(2, 7, dtype=torch.bool)),
    ]
