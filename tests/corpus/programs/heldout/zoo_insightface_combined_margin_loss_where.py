"""insightface arcface_torch: Partial FC marks out-of-shard labels -1, and CombinedMarginLoss picks positives with `torch.where(labels != -1)[0]` and rewrites their target logits in place.

Source: deepinsight/insightface@7fadd420c2351d0ffa8cac403421c1a3ed733365:recognition/arcface_torch/losses.py:1-58
Also: recognition/arcface_torch/partial_fc_v2.py:10-77,106-166 (PartialFC_V2
__init__ and forward), recognition/arcface_torch/train_v2.py:107-126.
Kept: CombinedMarginLoss verbatim (interclass filtering branch, the
ArcFace `arccos_ / += m2 / cos_` under no_grad, the CosFace branch, the bare
`raise`), PartialFC_V2's shard bookkeeping (num_local, class_start,
last_batch_size assert), the `labels[~index_positive] = -1` and
`labels[index_positive] -= self.class_start` masked updates, normalize +
linear + clamp, margin_softmax.
Simplified: a single rank (world_size 1, no all_gather, no AllGather
autograd function, no autocast/fp16, sample_rate 1 so `sample` is not
used); DistCrossEntropy replaced by F.cross_entropy with ignore_index=-1;
embedding 8, 10 classes.
"""
import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch.nn.functional import linear, normalize


class CombinedMarginLoss(torch.nn.Module):
    def __init__(self, 
                 s, 
                 m1,
                 m2,
                 m3,
                 interclass_filtering_threshold=0):
        super().__init__()
        self.s = s
        self.m1 = m1
        self.m2 = m2
        self.m3 = m3
        self.interclass_filtering_threshold = interclass_filtering_threshold
        
        # For ArcFace
        self.cos_m = math.cos(self.m2)
        self.sin_m = math.sin(self.m2)
        self.theta = math.cos(math.pi - self.m2)
        self.sinmm = math.sin(math.pi - self.m2) * self.m2
        self.easy_margin = False


    def forward(self, logits, labels):
        index_positive = torch.where(labels != -1)[0]

        if self.interclass_filtering_threshold > 0:
            with torch.no_grad():
                dirty = logits > self.interclass_filtering_threshold
                dirty = dirty.float()
                mask = torch.ones([index_positive.size(0), logits.size(1)], device=logits.device)
                mask.scatter_(1, labels[index_positive], 0)
                dirty[index_positive] *= mask
                tensor_mul = 1 - dirty    
            logits = tensor_mul * logits

        target_logit = logits[index_positive, labels[index_positive].view(-1)]

        if self.m1 == 1.0 and self.m3 == 0.0:
            with torch.no_grad():
                target_logit.arccos_()
                logits.arccos_()
                final_target_logit = target_logit + self.m2
                logits[index_positive, labels[index_positive].view(-1)] = final_target_logit
                logits.cos_()
            logits = logits * self.s        

        elif self.m3 > 0:
            final_target_logit = target_logit - self.m3
            logits[index_positive, labels[index_positive].view(-1)] = final_target_logit
            logits = logits * self.s
        else:
            raise

        return logits


class PartialFC_V2(torch.nn.Module):
    _version = 2

    def __init__(
        self,
        margin_loss: Callable,
        embedding_size: int,
        num_classes: int,
        sample_rate: float = 1.0,
        fp16: bool = False,
    ):
        super(PartialFC_V2, self).__init__()
        self.rank = 0
        self.world_size = 1

        self.embedding_size = embedding_size
        self.sample_rate: float = sample_rate
        self.fp16 = fp16
        self.num_local: int = num_classes // self.world_size + int(
            self.rank < num_classes % self.world_size
        )
        self.class_start: int = num_classes // self.world_size * self.rank + min(
            self.rank, num_classes % self.world_size
        )
        self.num_sample: int = int(self.sample_rate * self.num_local)
        self.last_batch_size: int = 0

        self.is_updated: bool = True
        self.init_weight_update: bool = True
        self.weight = torch.nn.Parameter(torch.normal(0, 0.01, (self.num_local, embedding_size)))

        # margin_loss
        if isinstance(margin_loss, Callable):
            self.margin_softmax = margin_loss
        else:
            raise

    def forward(
        self,
        local_embeddings: torch.Tensor,
        local_labels: torch.Tensor,
    ):
        local_labels.squeeze_()
        local_labels = local_labels.long()

        batch_size = local_embeddings.size(0)
        if self.last_batch_size == 0:
            self.last_batch_size = batch_size
        assert self.last_batch_size == batch_size, (
            f"last batch size do not equal current batch size: {self.last_batch_size} vs {batch_size}")

        embeddings = local_embeddings
        labels = local_labels

        labels = labels.view(-1, 1)
        index_positive = (self.class_start <= labels) & (
            labels < self.class_start + self.num_local
        )
        labels[~index_positive] = -1
        labels[index_positive] -= self.class_start

        weight = self.weight

        norm_embeddings = normalize(embeddings)
        norm_weight_activated = normalize(weight)
        logits = linear(norm_embeddings, norm_weight_activated)
        if self.fp16:
            logits = logits.float()
        logits = logits.clamp(-1, 1)

        logits = self.margin_softmax(logits, labels)
        loss = F.cross_entropy(logits, labels.view(-1), ignore_index=-1)
        return loss


def build_head():
    margin_loss = CombinedMarginLoss(64, 1.0, 0.5, 0.0, 0)
    return PartialFC_V2(margin_loss, 8, 10, 1.0, False)


module_partial_fc = torch.compile(build_head())


def make():
    torch.manual_seed(0)
    head = build_head()
    emb = torch.randn(4, 8)
    labels = torch.tensor([[3], [0], [9], [3]])
    return head, [(emb, labels), (emb * 2, torch.tensor([[1], [2], [5], [7]]))]
