"""ColBERT training forward with in-batch negatives: `query`/`doc` build token masks in Python from `input_ids.cpu().tolist()` against a punctuation skiplist, wrap them with `torch.tensor`, late-interaction MaxSim scoring via `colbert_score_reduce` (masked fill, config asserts), and `compute_ib_loss` indexes scores with a Python list of ranges.

Source: stanford-futuredata/ColBERT@501c29d9e0b7f7b393e36c4177ec2b141a253114:colbert/modeling/colbert.py:15-177
Also: colbert/modeling/base_colbert.py:13-56 (bert/linear/device properties),
colbert/modeling/hf_colbert.py:91-117 (HF_ColBERT.linear and LM),
colbert/utils/utils.py:156-163 (flatten), colbert/infra/config/settings.py (defaults),
colbert/training/training.py:96-119 (how the training loop calls the model and the loss).
Kept: ColBERT.__init__'s skiplist/pad_token plumbing, forward, compute_ib_loss,
query, doc, score, mask, colbert_score_reduce and colbert_score verbatim.
Simplified: the HuggingFace BERT is a one-layer stand-in (embeddings, one
masked sdpa attention block) returning a tuple like HF models; the
tokenizer is a stub whose encode maps a punctuation symbol to one id; the
C++ segmented_maxsim extension loading is dropped (only colbert_score_packed
uses it); ColBERTConfig is a plain class with the settings defaults used
here (use_ib_negatives=True, nway 2, dim 8); the compile entry is the
training-loop call scores = colbert(*encoding).
"""
import string

import torch
from torch import nn


class ColBERTConfig:
    def __init__(self, **kwargs):
        self.total_visible_gpus = 0
        self.mask_punctuation = True
        self.query_maxlen = 32
        self.interaction = "colbert"
        self.similarity = "cosine"
        self.nway = 2
        self.use_ib_negatives = False
        self.dim = 128
        for k, v in kwargs.items():
            setattr(self, k, v)


def flatten(L):
    # return [x for y in L for x in y]

    result = []
    for _list in L:
        result += _list

    return result


class StubTokenizer:
    pad_token_id = 0

    def encode(self, text, add_special_tokens=True):
        return [32 + ord(text[0]) % 32]


class TinyBertLM(nn.Module):
    """Stand-in for the HuggingFace BERT encoder: returns (last_hidden_state,)."""

    def __init__(self, vocab_size=64, hidden_size=16, num_heads=2):
        super().__init__()
        self.num_heads = num_heads
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)

    def forward(self, input_ids, attention_mask=None):
        h = self.LayerNorm(self.word_embeddings(input_ids))
        B, L, H = h.shape
        q, k, v = self.qkv(h).view(B, L, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        ext = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=ext)
        h = h + self.out(a.transpose(1, 2).reshape(B, L, H))
        return (h,)


class HF_ColBERT(nn.Module):
    def __init__(self, colbert_config):
        super().__init__()
        self.dim = colbert_config.dim
        self.bert = TinyBertLM()
        self.linear = nn.Linear(16, colbert_config.dim, bias=False)

    @property
    def LM(self):
        return self.bert

    @property
    def device(self):
        return next(self.parameters()).device


class BaseColBERT(torch.nn.Module):
    def __init__(self, name_or_path, colbert_config=None):
        super().__init__()

        self.colbert_config = colbert_config
        self.name = name_or_path
        self.model = HF_ColBERT(self.colbert_config)
        self.raw_tokenizer = StubTokenizer()

        self.eval()

    @property
    def device(self):
        return self.model.device

    @property
    def bert(self):
        return self.model.LM

    @property
    def linear(self):
        return self.model.linear


class ColBERT(BaseColBERT):
    """
        This class handles the basic encoding and scoring operations in ColBERT. It is used for training.
    """

    def __init__(self, name='bert-base-uncased', colbert_config=None):
        super().__init__(name, colbert_config)
        self.use_gpu = colbert_config.total_visible_gpus > 0

        if self.colbert_config.mask_punctuation:
            self.skiplist = {w: True
                             for symbol in string.punctuation
                             for w in [symbol, self.raw_tokenizer.encode(symbol, add_special_tokens=False)[0]]}
        self.pad_token = self.raw_tokenizer.pad_token_id

    def forward(self, Q, D):
        Q = self.query(*Q)
        D, D_mask = self.doc(*D, keep_dims='return_mask')

        # Repeat each query encoding for every corresponding document.
        Q_duplicated = Q.repeat_interleave(self.colbert_config.nway, dim=0).contiguous()
        scores = self.score(Q_duplicated, D, D_mask)

        if self.colbert_config.use_ib_negatives:
            ib_loss = self.compute_ib_loss(Q, D, D_mask)
            return scores, ib_loss

        return scores

    def compute_ib_loss(self, Q, D, D_mask):
        # TODO: Organize the code below! Quite messy.
        scores = (D.unsqueeze(0) @ Q.permute(0, 2, 1).unsqueeze(1)).flatten(0, 1)  # query-major unsqueeze

        scores = colbert_score_reduce(scores, D_mask.repeat(Q.size(0), 1, 1), self.colbert_config)

        nway = self.colbert_config.nway
        all_except_self_negatives = [list(range(qidx*D.size(0), qidx*D.size(0) + nway*qidx+1)) +
                                     list(range(qidx*D.size(0) + nway * (qidx+1), qidx*D.size(0) + D.size(0)))
                                     for qidx in range(Q.size(0))]

        scores = scores[flatten(all_except_self_negatives)]
        scores = scores.view(Q.size(0), -1)  # D.size(0) - self.colbert_config.nway + 1)

        labels = torch.arange(0, Q.size(0), device=scores.device) * (self.colbert_config.nway)

        return torch.nn.CrossEntropyLoss()(scores, labels)

    def query(self, input_ids, attention_mask):
        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)
        Q = self.bert(input_ids, attention_mask=attention_mask)[0]
        Q = self.linear(Q)

        mask = torch.tensor(self.mask(input_ids, skiplist=[]), device=self.device).unsqueeze(2).float()
        Q = Q * mask

        return torch.nn.functional.normalize(Q, p=2, dim=2)

    def doc(self, input_ids, attention_mask, keep_dims=True):
        assert keep_dims in [True, False, 'return_mask']

        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)
        D = self.bert(input_ids, attention_mask=attention_mask)[0]
        D = self.linear(D)
        mask = torch.tensor(self.mask(input_ids, skiplist=self.skiplist), device=self.device).unsqueeze(2).float()
        D = D * mask

        D = torch.nn.functional.normalize(D, p=2, dim=2)
        if self.use_gpu:
            D = D.half()

        if keep_dims is False:
            D, mask = D.cpu(), mask.bool().cpu().squeeze(-1)
            D = [d[mask[idx]] for idx, d in enumerate(D)]

        elif keep_dims == 'return_mask':
            return D, mask.bool()

        return D

    def score(self, Q, D_padded, D_mask):
        # assert self.colbert_config.similarity == 'cosine'
        if self.colbert_config.similarity == 'l2':
            assert self.colbert_config.interaction == 'colbert'
            return (-1.0 * ((Q.unsqueeze(2) - D_padded.unsqueeze(1))**2).sum(-1)).max(-1).values.sum(-1)
        return colbert_score(Q, D_padded, D_mask, config=self.colbert_config)

    def mask(self, input_ids, skiplist):
        mask = [[(x not in skiplist) and (x != self.pad_token) for x in d] for d in input_ids.cpu().tolist()]
        return mask


# TODO: In Query/DocTokenizer, use colbert.raw_tokenizer

# TODO: The masking below might also be applicable in the kNN part
def colbert_score_reduce(scores_padded, D_mask, config: ColBERTConfig):
    D_padding = ~D_mask.view(scores_padded.size(0), scores_padded.size(1)).bool()
    scores_padded[D_padding] = -9999
    scores = scores_padded.max(1).values

    assert config.interaction in ['colbert', 'flipr'], config.interaction

    if config.interaction == 'flipr':
        assert config.query_maxlen == 64, ("for now", config)
        # assert scores.size(1) == config.query_maxlen, scores.size()

        K1 = config.query_maxlen // 2
        K2 = 8

        A = scores[:, :config.query_maxlen].topk(K1, dim=-1).values.sum(-1)
        B = 0

        if K2 <= scores.size(1) - config.query_maxlen:
            B = scores[:, config.query_maxlen:].topk(K2, dim=-1).values.sum(1)

        return A + B

    return scores.sum(-1)


# TODO: Wherever this is called, pass `config=`
def colbert_score(Q, D_padded, D_mask, config=ColBERTConfig()):
    """
        Supply sizes Q = (1 | num_docs, *, dim) and D = (num_docs, *, dim).
        If Q.size(0) is 1, the matrix will be compared with all passages.
        Otherwise, each query matrix will be compared against the *aligned* passage.

        EVENTUALLY: Consider masking with -inf for the maxsim (or enforcing a ReLU).
    """

    use_gpu = config.total_visible_gpus > 0
    if use_gpu:
        Q, D_padded, D_mask = Q.cuda(), D_padded.cuda(), D_mask.cuda()

    assert Q.dim() == 3, Q.size()
    assert D_padded.dim() == 3, D_padded.size()
    assert Q.size(0) in [1, D_padded.size(0)]

    scores = D_padded @ Q.to(dtype=D_padded.dtype).permute(0, 2, 1)

    return colbert_score_reduce(scores, D_mask, config)


def build_colbert():
    config = ColBERTConfig(use_ib_negatives=True, nway=2, dim=8, query_maxlen=6)
    colbert = ColBERT(name='bert-base-uncased', colbert_config=config)
    colbert.train()
    return colbert


colbert = torch.compile(build_colbert())


def make():
    torch.manual_seed(0)
    q_ids = torch.randint(1, 64, (2, 6))
    q_ids[:, -1] = 0
    q_mask = (q_ids != 0).long()
    d_ids = torch.randint(1, 64, (4, 10))
    d_ids[1, 7:] = 0
    d_ids[3, 5:] = 0
    d_mask = (d_ids != 0).long()
    return build_colbert(), [((q_ids, q_mask), (d_ids, d_mask))]
