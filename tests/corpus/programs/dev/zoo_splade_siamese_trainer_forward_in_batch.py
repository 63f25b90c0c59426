"""SPLADE siamese trainer forward: `parse` the HF-style batch dict by key prefix, call the model with `**kwargs` dicts (query + pos/neg docs, optional in-batch scoring), log(1+relu) max-pooled MLM logits, dot-product scores, prefix-renamed output dict.

Source: naver/splade@490cd2a2d8e35fd617a9895ad5861f1d83961403:splade/tasks/transformer_trainer.py:156-181 (SiameseTransformerTrainer.forward); model from naver/splade@07d2c1ff83828f545c40769fa46a0a45736ff0ed:splade/models/transformer_rep.py:15-154; parse/normalize/generate_bow from splade/utils/utils.py; NullContextManager from splade/tasks/amp.py
Kept: TransformerRep, SiameseBase (its `train` override, **kwargs forward with the
`"nb_negatives" in kwargs` / `"score_batch" in kwargs` branches, NullContextManager when
fp16 is off), Splade.encode (sum/max aggregation), the trainer's forward verbatim
(`"augment_pairs" in self.config`, `"teacher_p_score" in batch`).
Simplified: AutoModelForMaskedLM.from_pretrained is a 1-layer randomly initialised
MLM returning {"logits": ...}; no tokenizer; the trainer keeps only the attributes
forward uses (its __init__ does file I/O); vocab 40, hidden 16, batch 3.
The trainer's bound `forward` is what gets compiled.
"""
import math
from abc import ABC

import torch


# ---- stand-in for AutoModelForMaskedLM (a tiny BERT MLM returning {"logits": ...}) ----

class TinyConfig:
    vocab_size = 40
    hidden_size = 16
    num_attention_heads = 2
    num_hidden_layers = 1


class TinyMaskedLM(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = torch.nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = torch.nn.Embedding(32, config.hidden_size)
        self.layers = torch.nn.ModuleList([
            torch.nn.TransformerEncoderLayer(config.hidden_size, config.num_attention_heads,
                                             dim_feedforward=2 * config.hidden_size, dropout=0.1,
                                             batch_first=True)
            for _ in range(config.num_hidden_layers)])
        self.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        h = self.embeddings(input_ids) + self.position_embeddings(pos)
        for layer in self.layers:
            h = layer(h, src_key_padding_mask=attention_mask == 0)
        return {"logits": self.lm_head(h)}


# ---- splade/tasks/amp.py ----

class NullContextManager(object):
    def __init__(self, dummy_resource=None):
        self.dummy_resource = dummy_resource

    def __enter__(self):
        return self.dummy_resource

    def __exit__(self, *args):
        pass


# ---- splade/utils/utils.py ----

def parse(d, name):
    return {k.replace(name + "_", ""): v for k, v in d.items() if name in k}


def generate_bow(input_ids, output_dim, device, values=None):
    """from a batch of input ids, generates batch of bow rep
    """
    bs = input_ids.shape[0]
    bow = torch.zeros(bs, output_dim).to(device)
    if values is None:
        bow[torch.arange(bs).unsqueeze(-1), input_ids] = 1
    else:
        bow[torch.arange(bs).unsqueeze(-1), input_ids] = values
    return bow


def normalize(tensor, eps=1e-9):
    """normalize input tensor on last dimension
    """
    return tensor / (torch.norm(tensor, dim=-1, keepdim=True) + eps)


# ---- splade/models/transformer_rep.py ----

class TransformerRep(torch.nn.Module):

    def __init__(self, model_type_or_dir, output, fp16=False):
        super().__init__()
        assert output in ("mean", "cls", "hidden_states", "MLM", "t5"), "provide valid output"
        # model_class.from_pretrained(model_type_or_dir) -> a tiny randomly initialised MLM
        self.transformer = TinyMaskedLM(model_type_or_dir)
        self.output = output
        self.fp16 = fp16

    def forward(self, **tokens):
        with torch.cuda.amp.autocast() if self.fp16 else NullContextManager():
            # tokens: output of HF tokenizer
            out = self.transformer(**tokens)
            if self.output == "MLM":
                return out
            hidden_states = self.transformer(**tokens)[0]
            # => forward from AutoModel returns a tuple, first element is hidden states, shape (bs, seq_len, hidden_dim)
            if self.output == "mean":
                return torch.sum(hidden_states * tokens["attention_mask"].unsqueeze(-1),
                                 dim=1) / torch.sum(tokens["attention_mask"], dim=-1, keepdim=True)
            elif self.output == "cls":
                return hidden_states[:, 0, :]  # returns [CLS] representation
            else:
                return hidden_states, tokens["attention_mask"]
                # no pooling, we return all the hidden states (+ the attention mask)


class SiameseBase(torch.nn.Module, ABC):

    def __init__(self, model_type_or_dir, output, match="dot_product", model_type_or_dir_q=None, freeze_d_model=False,
                 fp16=False):
        super().__init__()
        self.output = output
        assert match in ("dot_product", "cosine_sim"), "specify right match argument"
        self.cosine = True if match == "cosine_sim" else False
        self.match = match
        self.fp16 = fp16
        self.transformer_rep = TransformerRep(model_type_or_dir, output, fp16)
        self.transformer_rep_q = TransformerRep(model_type_or_dir_q,
                                                output, fp16) if model_type_or_dir_q is not None else None
        assert not (freeze_d_model and model_type_or_dir_q is None)
        self.freeze_d_model = freeze_d_model
        if freeze_d_model:
            self.transformer_rep.requires_grad_(False)

    def encode(self, kwargs, is_q):
        raise NotImplementedError

    def encode_(self, tokens, is_q=False):
        transformer = self.transformer_rep
        if is_q and self.transformer_rep_q is not None:
            transformer = self.transformer_rep_q
        return transformer(**tokens)

    def train(self, mode=True):
        if self.transformer_rep_q is None:  # only one model, life is simple
            self.transformer_rep.train(mode)
        else:  # possibly freeze d model
            self.transformer_rep_q.train(mode)
            mode_d = False if not mode else not self.freeze_d_model
            self.transformer_rep.train(mode_d)

    def forward(self, **kwargs):
        """forward takes as inputs 1 or 2 dict
        "d_kwargs" => contains all inputs for document encoding
        "q_kwargs" => contains all inputs for query encoding ([OPTIONAL], e.g. for indexing)
        """
        with torch.cuda.amp.autocast() if self.fp16 else NullContextManager():
            out = {}
            do_d, do_q = "d_kwargs" in kwargs, "q_kwargs" in kwargs
            if do_d:
                d_rep = self.encode(kwargs["d_kwargs"], is_q=False)
                if self.cosine:  # normalize embeddings
                    d_rep = normalize(d_rep)
                out.update({"d_rep": d_rep})
            if do_q:
                q_rep = self.encode(kwargs["q_kwargs"], is_q=True)
                if self.cosine:  # normalize embeddings
                    q_rep = normalize(q_rep)
                out.update({"q_rep": q_rep})
            if do_d and do_q:
                if "nb_negatives" in kwargs:
                    # in the cas of negative scoring, where there are several negatives per query
                    bs = q_rep.shape[0]
                    d_rep = d_rep.reshape(bs, kwargs["nb_negatives"], -1)  # shape (bs, nb_neg, out_dim)
                    q_rep = q_rep.unsqueeze(1)  # shape (bs, 1, out_dim)
                    score = torch.sum(q_rep * d_rep, dim=-1)  # shape (bs, nb_neg)
                else:
                    if "score_batch" in kwargs:
                        score = torch.matmul(q_rep, d_rep.t())  # shape (bs_q, bs_d)
                    else:
                        score = torch.sum(q_rep * d_rep, dim=1, keepdim=True)  # shape (bs, )
                out.update({"score": score})
        return out


class Splade(SiameseBase):
    """SPLADE model
    """

    def __init__(self, model_type_or_dir, model_type_or_dir_q=None, freeze_d_model=False, agg="max", fp16=True):
        super().__init__(model_type_or_dir=model_type_or_dir,
                         output="MLM",
                         match="dot_product",
                         model_type_or_dir_q=model_type_or_dir_q,
                         freeze_d_model=freeze_d_model,
                         fp16=fp16)
        self.output_dim = self.transformer_rep.transformer.config.vocab_size  # output dim = vocab size = 30522 for BERT
        assert agg in ("sum", "max")
        self.agg = agg

    def encode(self, tokens, is_q):
        out = self.encode_(tokens, is_q)["logits"]  # shape (bs, pad_len, voc_size)
        if self.agg == "sum":
            return torch.sum(torch.log(1 + torch.relu(out)) * tokens["attention_mask"].unsqueeze(-1), dim=1)
        else:
            values, _ = torch.max(torch.log(1 + torch.relu(out)) * tokens["attention_mask"].unsqueeze(-1), dim=1)
            return values
            # 0 masking also works with max because all activations are positive


# ---- splade/losses/pairwise.py ----

class PairwiseNLL:
    def __init__(self):
        self.logsoftmax = torch.nn.LogSoftmax(dim=1)

    def __call__(self, out_d):
        pos_scores, neg_scores = out_d["pos_score"], out_d["neg_score"]
        scores = self.logsoftmax(torch.cat([pos_scores, neg_scores], dim=1))
        return torch.mean(-scores[:, 0])


class InBatchPairwiseNLL:
    """in batch negatives version
    """

    def __init__(self):
        self.logsoftmax = torch.nn.LogSoftmax(dim=1)

    def __call__(self, out_d):
        in_batch_scores, neg_scores = out_d["pos_score"], out_d["neg_score"]
        # here in_batch_scores is a matrix of size bs * (bs / nb_gpus)
        nb_columns = in_batch_scores.shape[1]
        nb_gpus = int(in_batch_scores.shape[0] / nb_columns)
        temp = torch.cat([in_batch_scores, neg_scores], dim=1)  # concat neg score from BM25 sampling
        # shape (batch_size, batch_size/nb_gpus + 1)
        scores = self.logsoftmax(temp)
        return torch.mean(-scores[torch.arange(in_batch_scores.shape[0]),
                                  torch.arange(nb_columns).repeat(nb_gpus)])


class SiameseTransformerTrainer:
    """the attributes of splade.tasks.base.trainer.TrainerIter that forward() reads"""

    def __init__(self, model, config, fp16=False):
        self.model = model
        self.config = config
        self.fp16 = fp16

    def forward(self, batch):
        # for this trainer, the batch contains query, pos doc and neg doc HF formatted inputs
        q_kwargs = parse(batch, "q")
        d_pos_kwargs = parse(batch, "pos")
        d_neg_kwargs = parse(batch, "neg")
        d_pos_args = {"q_kwargs": q_kwargs, "d_kwargs": d_pos_kwargs}
        d_neg_args = {"q_kwargs": q_kwargs, "d_kwargs": d_neg_kwargs}
        if "augment_pairs" in self.config:
            if self.config["augment_pairs"] == "in_batch_negatives":
                d_pos_args["score_batch"] = True  # meaning that for the POSITIVE documents in the batch, we will
                # actually compute all the scores w.r.t. the queries in the batch
            else:
                raise NotImplementedError
        with torch.cuda.amp.autocast() if self.fp16 else NullContextManager():
            out_pos = self.model(**d_pos_args)
            out_neg = self.model(**d_neg_args)
        out = {}
        for k, v in out_pos.items():
            out["pos_{}".format(k)] = v
        for k, v in out_neg.items():
            out["neg_{}".format(k)] = v
        if "teacher_p_score" in batch:  # distillation pairs dataloader
            out["teacher_pos_score"] = batch["teacher_p_score"]
            out["teacher_neg_score"] = batch["teacher_n_score"]
        return out


def make_batch(bs=3, q_len=4, d_len=6, vocab=40):
    batch = {}
    for name, length in (("q", q_len), ("pos", d_len), ("neg", d_len)):
        ids = torch.randint(1, vocab, (bs, length))
        mask = torch.ones(bs, length, dtype=torch.long)
        mask[0, length - 1:] = 0
        batch["{}_input_ids".format(name)] = ids
        batch["{}_attention_mask".format(name)] = mask
    return batch


def build_trainer():
    model = Splade(TinyConfig(), agg="max", fp16=False)
    model.train()
    trainer = SiameseTransformerTrainer(model, {"augment_pairs": "in_batch_negatives",
                                                "gradient_accumulation_steps": 1})
    trainer.forward = torch.compile(trainer.forward)
    return trainer


def make():
    torch.manual_seed(0)
    model = Splade(TinyConfig(), agg="max", fp16=False)
    model.train()
    trainer = SiameseTransformerTrainer(model, {"augment_pairs": "in_batch_negatives",
                                                "gradient_accumulation_steps": 1})
    plain = make_batch()
    distil = make_batch()
    distil["teacher_p_score"] = torch.randn(3)
    distil["teacher_n_score"] = torch.randn(3)
    return trainer.forward, [(plain,), (distil,)]
