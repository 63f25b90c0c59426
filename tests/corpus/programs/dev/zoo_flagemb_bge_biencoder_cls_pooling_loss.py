"""FlagEmbedding (BGE) fine-tuning bi-encoder: `encode` runs the backbone with `**features, return_dict=True`, pools by `sentence_pooling_method` ("cls" takes position 0, "mean" divides by `mask.sum(axis=1, keepdim=True)`), optionally normalizes; `forward` branches on `self.training` (in-batch scores over temperature, `torch.arange` targets times `p_reps.size(0) // q_reps.size(0)` group size, cross-entropy) and returns an `EncoderOutput` dataclass.

Source: FlagOpen/FlagEmbedding@091c19d98464b1ebcd679ec1191cc5703c895af8:FlagEmbedding/baai_general_embedding/finetune/modeling.py:1-121
Kept: EncoderOutput, BiEncoderModel.__init__ (minus from_pretrained), sentence_embedding, encode,
compute_similarity, forward, compute_loss and _dist_gather_tensor verbatim.
Simplified: `AutoModel.from_pretrained(model_name)` is a one-layer BERT-like stand-in returning an
object with `.last_hidden_state`; transformers' ModelOutput base is replaced by a plain base class
(EncoderOutput stays a dataclass); hidden 16; 2 queries with 2 passages each (group size 2), or 3 with 1;
the trainer compiles the model (`torch.compile(model)`), measured in eval mode (scores only)
and in training mode (loss).
"""
import logging
from dataclasses import dataclass
from typing import Dict, Optional

import torch
import torch.distributed as dist
from torch import nn, Tensor

logger = logging.getLogger(__name__)


# ---- transformers stand-ins ----
class ModelOutput:
    pass


class BaseModelOutput:
    def __init__(self, last_hidden_state):
        self.last_hidden_state = last_hidden_state


class TinyBertModel(nn.Module):
    def __init__(self, vocab_size=30, hidden_size=16, max_positions=16):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(max_positions, hidden_size)
        self.token_type_embeddings = nn.Embedding(2, hidden_size)
        self.layer = nn.TransformerEncoderLayer(hidden_size, 2, 32, dropout=0.1, batch_first=True)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, return_dict=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        h = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(token_type_ids)
        h = self.layer(h, src_key_padding_mask=attention_mask == 0)
        return BaseModelOutput(h)


class AutoModel:
    @staticmethod
    def from_pretrained(model_name):
        return TinyBertModel()


# ---- FlagEmbedding/baai_general_embedding/finetune/modeling.py ----
@dataclass
class EncoderOutput(ModelOutput):
    q_reps: Optional[Tensor] = None
    p_reps: Optional[Tensor] = None
    loss: Optional[Tensor] = None
    scores: Optional[Tensor] = None


class BiEncoderModel(nn.Module):
    TRANSFORMER_CLS = AutoModel

    def __init__(self,
                 model_name: str = None,
                 normlized: bool = False,
                 sentence_pooling_method: str = 'cls',
                 negatives_cross_device: bool = False,
                 temperature: float = 1.0,
                 ):
        super().__init__()
        self.model = AutoModel.from_pretrained(model_name)
        self.cross_entropy = nn.CrossEntropyLoss(reduction='mean')

        self.normlized = normlized
        self.sentence_pooling_method = sentence_pooling_method
        self.temperature = temperature
        if not normlized:
            self.temperature = 1.0
            logger.info("reset temperature = 1.0 due to using inner product to compute similarity")

        self.negatives_cross_device = negatives_cross_device
        if self.negatives_cross_device:
            if not dist.is_initialized():
                raise ValueError('Distributed training has not been initialized for representation all gather.')
            self.process_rank = dist.get_rank()
            self.world_size = dist.get_world_size()

    def gradient_checkpointing_enable(self):
        self.model.gradient_checkpointing_enable()

    def sentence_embedding(self, hidden_state, mask):
        if self.sentence_pooling_method == 'mean':
            s = torch.sum(hidden_state * mask.unsqueeze(-1).float(), dim=1)
            d = mask.sum(axis=1, keepdim=True).float()
            return s / d
        elif self.sentence_pooling_method == 'cls':
            return hidden_state[:, 0]

    def encode(self, features):
        if features is None:
            return None
        psg_out = self.model(**features, return_dict=True)
        p_reps = self.sentence_embedding(psg_out.last_hidden_state, features['attention_mask'])
        if self.normlized:
            p_reps = torch.nn.functional.normalize(p_reps, dim=-1)
        return p_reps.contiguous()

    def compute_similarity(self, q_reps, p_reps):
        if len(p_reps.size()) == 2:
            return torch.matmul(q_reps, p_reps.transpose(0, 1))
        return torch.matmul(q_reps, p_reps.transpose(-2, -1))

    def forward(self, query: Dict[str, Tensor] = None, passage: Dict[str, Tensor] = None, teacher_score: Tensor = None):
        q_reps = self.encode(query)
        p_reps = self.encode(passage)

        if self.training:
            if self.negatives_cross_device:
                q_reps = self._dist_gather_tensor(q_reps)
                p_reps = self._dist_gather_tensor(p_reps)

            scores = self.compute_similarity(q_reps, p_reps)
            scores = scores / self.temperature
            scores = scores.view(q_reps.size(0), -1)

            target = torch.arange(scores.size(0), device=scores.device, dtype=torch.long)
            target = target * (p_reps.size(0) // q_reps.size(0))
            loss = self.compute_loss(scores, target)

        else:
            scores = self.compute_similarity(q_reps, p_reps)
            loss = None
        return EncoderOutput(
            loss=loss,
            scores=scores,
            q_reps=q_reps,
            p_reps=p_reps,
        )

    def compute_loss(self, scores, target):
        return self.cross_entropy(scores, target)

    def _dist_gather_tensor(self, t: Optional[torch.Tensor]):
        if t is None:
            return None
        t = t.contiguous()

        all_tensors = [torch.empty_like(t) for _ in range(self.world_size)]
        dist.all_gather(all_tensors, t)

        all_tensors[self.process_rank] = t
        all_tensors = torch.cat(all_tensors, dim=0)

        return all_tensors


def features(n, length, seed):
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, 30, (n, length), generator=g)
    attention_mask = torch.ones(n, length, dtype=torch.long)
    attention_mask[-1, length - 2:] = 0
    input_ids[-1, length - 2:] = 0
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def build_model():
    model = BiEncoderModel(model_name="BAAI/bge-small-en", normlized=True, temperature=0.02)
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = BiEncoderModel(model_name="BAAI/bge-small-en", normlized=True, temperature=0.02).eval()
    return model, [
        (features(2, 6, 0), features(4, 8, 1)),
        (features(3, 5, 2), features(3, 7, 3)),
    ]
