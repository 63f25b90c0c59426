"""1d-tokenizer ImageBert.generate: MaskGIT decoding with a tensor-valued slice bound and masked condition assignment.

Source: bytedance/1d-tokenizer@14b07ef762:modeling/maskgit.py:29-147
Kept: ImageBert.__init__'s config plumbing (config.model.vq_model/generator),
forward() with the class-drop mask (`condition[drop_label_mask] = ...`), the
condition prepend and the NotImplementedError branch, and generate() verbatim:
cfg / guidance_decay, softmax temperature annealing, the local gumbel helpers,
np.arccos/np.floor mask schedule, torch.Tensor([...]) mask_len clamps,
`sorted_confidence[:, mask_len.long() - 1:mask_len.long()]`, last-step branch.
Simplified: transformers.BertModel is a local stand-in (embeddings, one MLP
block, LayerNorm, returns a tuple); codebook 8, 4 classes, 6 image tokens,
3 sampling steps.
"""
import math

import numpy as np
import torch
from torch import nn


class Namespace:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class BertModel(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_position_embeddings, hidden_dropout_prob):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.dropout = nn.Dropout(hidden_dropout_prob)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, 2 * hidden_size), nn.GELU(), nn.Linear(2 * hidden_size, hidden_size))
        self.norm = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        h = self.dropout(self.word_embeddings(input_ids) + self.position_embeddings(positions))
        h = self.norm(h + self.mlp(h))
        return (h,)


class ImageBert(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.target_codebook_size = config.model.vq_model.codebook_size
        self.condition_num_classes = config.model.generator.condition_num_classes
        self.image_seq_len = config.model.generator.image_seq_len
        self.mask_token_id = self.target_codebook_size

        self.model = BertModel(
            vocab_size=self.target_codebook_size + self.condition_num_classes + 2,
            hidden_size=16,
            max_position_embeddings=config.model.generator.image_seq_len + 1,
            hidden_dropout_prob=config.model.generator.dropout,
        )
        self.model.lm_head = nn.Linear(16, self.target_codebook_size, bias=True)

    def forward(self, input_ids=None, condition=None, cond_drop_prob=0.1):
        drop_label_mask = torch.rand_like(condition, dtype=torch.float) < cond_drop_prob
        condition = condition + self.target_codebook_size + 1
        condition[drop_label_mask] = self.condition_num_classes + self.target_codebook_size + 1
        if input_ids is not None:
            input_ids = torch.cat([condition.view(condition.shape[0], -1),
                                   input_ids.view(input_ids.shape[0], -1),], dim=1)
        else:
            raise NotImplementedError
        model_output = self.model(input_ids=input_ids)
        model_output = model_output[0]
        return self.model.lm_head(model_output[:, 1:])

    @torch.no_grad()
    def generate(self,
                 condition,
                 guidance_scale=3.0,
                 guidance_decay=False,
                 randomize_temperature=4.5,
                 softmax_temperature_annealing=False,
                 num_sample_steps=8):
        device = condition.device
        ids = torch.full((condition.shape[0], self.image_seq_len),
                         self.mask_token_id, device=device)
        cfg_scale = 0. if guidance_decay else guidance_scale

        for step in range(num_sample_steps):
            ratio = 1. * (step + 1) / num_sample_steps
            annealed_temp = randomize_temperature * (1.0 - ratio)
            is_mask = (ids == self.mask_token_id)
            if cfg_scale != 0:
                cond_logits = self.forward(
                    ids, condition, cond_drop_prob=0.0
                )
                uncond_logits = self.forward(
                    ids, condition, cond_drop_prob=1.0
                )
                logits = cond_logits + (cond_logits - uncond_logits) * cfg_scale
            else:
                logits = self.forward(
                    ids, condition, cond_drop_prob=0.0
                )

            if softmax_temperature_annealing:
                softmax_temperature = 0.5 + 0.8 * (1 - ratio)
                logits = logits / softmax_temperature

            def log(t, eps=1e-20):
                return torch.log(t.clamp(min=eps))
            def gumbel_noise(t):
                noise = torch.zeros_like(t).uniform_(0, 1)
                return -log(-log(noise))
            def add_gumbel_noise(t, temperature):
                return t + temperature * gumbel_noise(t)

            sampled_ids = add_gumbel_noise(logits, annealed_temp).argmax(dim=-1)
            sampled_logits = torch.squeeze(
                torch.gather(logits, dim=-1, index=torch.unsqueeze(sampled_ids, -1)), -1)
            sampled_ids = torch.where(is_mask, sampled_ids, ids)
            sampled_logits = torch.where(is_mask, sampled_logits, +np.inf).float()
            mask_ratio = np.arccos(ratio) / (math.pi * 0.5)

            mask_len = torch.Tensor([np.floor(self.image_seq_len * mask_ratio)]).to(device)
            mask_len = torch.maximum(torch.Tensor([1]).to(device),
                                     torch.minimum(torch.sum(is_mask, dim=-1, keepdims=True) - 1,
                                                   mask_len))[0].squeeze()
            confidence = add_gumbel_noise(sampled_logits, annealed_temp)
            sorted_confidence, _ = torch.sort(confidence, axis=-1)
            cut_off = sorted_confidence[:, mask_len.long() - 1:mask_len.long()]
            masking = (confidence <= cut_off)
            if step == num_sample_steps - 1:
                ids = sampled_ids
            else:
                ids = torch.where(masking, self.mask_token_id, sampled_ids)

            if guidance_decay:
                cfg_scale = ratio * guidance_scale
        return ids


def get_config():
    return Namespace(model=Namespace(
        vq_model=Namespace(codebook_size=8),
        generator=Namespace(condition_num_classes=4, image_seq_len=6, dropout=0.1, attn_drop=0.1),
    ))


def sample_imagenet():
    generator = ImageBert(get_config()).eval()
    generate = torch.compile(generator.generate)
    return generate


def make():
    torch.manual_seed(0)
    generator = ImageBert(get_config()).eval()
    condition = torch.tensor([1, 3])
    return generator.generate, [
        (condition, 3.0, False, 4.5, False, 3),
        (condition, 2.0, True, 4.5, True, 3),
    ]
