"""ColBERT late-interaction scoring: `colbert_score` asserts on `Q.dim()`/`Q.size(0)` and matmuls, then `colbert_score_reduce` masks padding with `scores_padded[D_padding] = -9999`, takes the MaxSim, and for the `flipr` interaction sums top-k slices, adding the second top-k only when `K2 <= scores.size(1) - config.query_maxlen`.

Source: stanford-futuredata/ColBERT@501c29d9e0b7f7b393e36c4177ec2b141a253114:colbert/modeling/colbert.py:128-177
Also: colbert/infra/config/settings.py (the ColBERTConfig defaults used here).
Kept: colbert_score_reduce and colbert_score verbatim (the default
`config=ColBERTConfig()` argument, the use_gpu branch, the assert messages).
Simplified: ColBERTConfig is a plain class carrying the settings defaults
(total_visible_gpus 0 on this CPU corpus); 3 documents of 12 tokens, dim 8;
queries of 6 tokens for "colbert" and 64/72 tokens for "flipr" (which
asserts query_maxlen == 64).
"""
import torch


class ColBERTConfig:
    def __init__(self, **kwargs):
        self.total_visible_gpus = 0
        self.query_maxlen = 32
        self.interaction = "colbert"
        self.similarity = "cosine"
        for k, v in kwargs.items():
            setattr(self, k, v)


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


score = torch.compile(colbert_score)


def make():
    torch.manual_seed(0)
    D = torch.nn.functional.normalize(torch.randn(3, 12, 8), dim=-1)
    D_mask = torch.ones(3, 12, 1, dtype=torch.bool)
    D_mask[1, 9:] = False
    D_mask[2, 4:] = False
    Q = torch.nn.functional.normalize(torch.randn(3, 6, 8), dim=-1)
    Q1 = Q[:1]
    Q64 = torch.nn.functional.normalize(torch.randn(3, 64, 8), dim=-1)
    Q72 = torch.nn.functional.normalize(torch.randn(1, 72, 8), dim=-1)
    colbert_cfg = ColBERTConfig(query_maxlen=6)
    flipr_cfg = ColBERTConfig(query_maxlen=64, interaction="flipr")
    return colbert_score, [
        (Q, D.clone(), D_mask, colbert_cfg),
        (Q1, D.clone(), D_mask, colbert_cfg),
        (Q64, D.clone(), D_mask, flipr_cfg),
        (Q72, D.clone(), D_mask, flipr_cfg),
    ]
