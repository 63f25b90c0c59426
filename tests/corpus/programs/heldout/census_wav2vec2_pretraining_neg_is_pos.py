"""Wav2Vec2 pretraining loss: `neg_is_pos = (quantized == negatives).all(-1)` then `if neg_is_pos.any():
logits[1:][neg_is_pos] = float("-inf")` before the contrastive cross-entropy.

Source: huggingface/transformers@v5.23.0:src/transformers/models/wav2vec2/modeling_wav2vec2.py:1440-1500
(Wav2Vec2ForPreTraining.forward steps 4-6 and compute_contrastive_logits)
Census: penguinwu/oss-model-graph-break-corpus sweeps Wav2Vec2 base models; the pretraining head adds this
codebook-collapse guard in training.
Kept: compute_contrastive_logits (cosine similarity / temperature), the neg_is_pos test and masked fill,
the transposed cross-entropy with -100 targets from mask_time_indices.
Simplified: quantized/negative features and the time mask are inputs; no quantizer.
"""
import torch
from torch import nn


class Wav2Vec2ForPreTraining(nn.Module):
    def __init__(self, hidden=4, temperature=0.1):
        super().__init__()
        self.project_hid = nn.Linear(hidden, hidden)
        self.contrastive_logits_temperature = temperature

    @staticmethod
    def compute_contrastive_logits(target_features, negative_features, predicted_features, temperature=0.1):
        target_features = torch.cat([target_features, negative_features], dim=0)
        logits = torch.cosine_similarity(predicted_features.float(), target_features.float(), dim=-1).type_as(
            target_features
        )
        # apply temperature
        logits = logits / temperature
        return logits

    def forward(self, transformer_features, quantized_features, negative_quantized_features, mask_time_indices):
        transformer_features = self.project_hid(transformer_features)
        logits = self.compute_contrastive_logits(
            quantized_features[None, :],
            negative_quantized_features,
            transformer_features,
            self.contrastive_logits_temperature,
        )

        # 5. if a negative vector is identical to the positive (i.e. when codebook utilization is low),
        # its cosine similarity will be masked
        neg_is_pos = (quantized_features == negative_quantized_features).all(-1)

        if neg_is_pos.any():
            logits[1:][neg_is_pos] = float("-inf")

        # 6. compute contrastive loss
        logits = logits.transpose(0, 2).reshape(-1, logits.size(0))
        target = ((1 - mask_time_indices.long()) * -100).transpose(0, 1).flatten()

        contrastive_loss = nn.functional.cross_entropy(logits.float(), target, reduction="sum")
        return contrastive_loss


def train_step(model, batch):
    model.train()
    compiled = torch.compile(model)
    compiled(*batch).backward()


def make():
    torch.manual_seed(0)
    B, T, H, K = 1, 3, 4, 2
    feats = torch.randn(B, T, H)
    q = torch.randn(B, T, H)
    negs = torch.randn(K, B, T, H)
    collapsed = negs.clone()
    collapsed[0, 0, 1] = q[0, 1]
    mask = torch.tensor([[True, False, True]])
    return Wav2Vec2ForPreTraining().train(), [(feats, q, negs, mask), (feats, q, collapsed, mask)]
