"""SPLADE training iteration body: forward, ranking loss `.mean()`, `loss.item()` into a moving average, FLOPS regularizer with quadratic lambda schedulers stepped in Python, L0 / FLOPS monitoring under no_grad, gradient-accumulation division.

Source: naver/splade@490cd2a2d8e35fd617a9895ad5861f1d83961403:splade/tasks/transformer_trainer.py:47-103 (one iteration of TransformerTrainer.train_iterations, from `with mpm.context():` to `loss = loss / ...`) and :156-181 (SiameseTransformerTrainer.forward); naver/splade@141a8c08bf67c7bb1627e616995e2abf0894d16b:src/losses/regularization.py:1-70; model from naver/splade@07d2c1ff83828f545c40769fa46a0a45736ff0ed:splade/models/transformer_rep.py:15-154; losses from splade/losses/pairwise.py; amp.py, utils.py helpers
Kept: the iteration body verbatim (batch[k] = v.to(self.device), self.loss(out).mean(),
moving average with loss.item(), the nested regularizer-dict lookups with
`"lambda_q" in ...` and `.step()`, `"pos_q_{}".format(...)` keys,
`loss += sum(regularization_losses.values())`, the no_grad monitor losses);
MixedPrecisionManager.context; RegWeightScheduler, FLOPS, L0; PairwiseNLL;
Splade / SiameseBase / TransformerRep as in the repo.
Simplified: the loop, optimizer step, logging/writer and checkpointing around the body
are left out (the body is a method `train_iteration(batch, moving_avg_ranking_loss)`);
AutoModelForMaskedLM is a 1-layer randomly initialised MLM returning {"logits": ...};
vocab 40, hidden 16, batch 3. The bound `train_iteration` is what gets compiled.
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


# ---- src/losses/regularization.py ----

class L0:
    """non-differentiable
    """

    def __call__(self, batch_rep):
        return torch.count_nonzero(batch_rep, dim=-1).float().mean()


class FLOPS:
    """constraint from Minimizing FLOPs to Learn Efficient Sparse Representations
    https://arxiv.org/abs/2004.05665
    """

    def __call__(self, batch_rep):
        return torch.sum(torch.mean(torch.abs(batch_rep), dim=0) ** 2)


class RegWeightScheduler:
    """same scheduling as in: Minimizing FLOPs to Learn Efficient Sparse Representations
    https://arxiv.org/abs/2004.05665
    """

    def __init__(self, lambda_, T):
        self.lambda_ = lambda_
        self.T = T
        self.t = 0
        self.lambda_t = 0

    def step(self):
        """quadratic increase until time T
        """
        if self.t >= self.T:
            pass
        else:
            self.t += 1
            self.lambda_t = self.lambda_ * (self.t / self.T) ** 2
        return self.lambda_t

    def get_lambda(self):
        return self.lambda_t


# ---- splade/tasks/amp.py ----

class MixedPrecisionManager:
    def __init__(self, activated):
        print("Using FP16:", activated)
        self.activated = activated
        if self.activated:
            self.scaler = torch.cuda.amp.GradScaler()

    def context(self):
        return torch.cuda.amp.autocast() if self.activated else NullContextManager()


# ---- splade/tasks/transformer_trainer.py ----

class SiameseTransformerTrainer:
    """the attributes of splade.tasks.base.trainer.TrainerIter that the iteration reads"""

    def __init__(self, model, loss, regularizer, config, device, fp16=False):
        self.model = model
        self.loss = loss
        self.regularizer = regularizer
        self.config = config
        self.device = device
        self.fp16 = fp16
        self.mpm = MixedPrecisionManager(self.fp16)

    def train_iteration(self, batch, moving_avg_ranking_loss):
        mpm = self.mpm
        with mpm.context():
            for k, v in batch.items():
                batch[k] = v.to(self.device)
            out = self.forward(batch)  # out is a dict (we just feed it to the loss)
            loss = self.loss(out).mean()  # we need to average as we obtain one loss per GPU in DataParallel
            moving_avg_ranking_loss = 0.99 * moving_avg_ranking_loss + 0.01 * loss.item()
            # training moving average for logging
            if self.regularizer is not None:
                if "train" in self.regularizer:
                    regularization_losses = {}
                    for reg in self.regularizer["train"]:
                        lambda_q = self.regularizer["train"][reg]["lambdas"]["lambda_q"].step() if "lambda_q" in \
                                                                                                   self.regularizer[
                                                                                                       "train"][
                                                                                                       reg][
                                                                                                       "lambdas"] else False
                        lambda_d = self.regularizer["train"][reg]["lambdas"]["lambda_d"].step() if "lambda_d" in \
                                                                                                   self.regularizer[
                                                                                                       "train"][
                                                                                                       reg][
                                                                                                       "lambdas"] else False
                        targeted_rep = self.regularizer["train"][reg]["targeted_rep"]  # used to select the "name"
                        regularization_losses[reg] = 0
                        if lambda_q:
                            regularization_losses[reg] += (self.regularizer["train"][reg]["loss"](
                                out["pos_q_{}".format(targeted_rep)]) * lambda_q).mean()
                        if lambda_d:
                            regularization_losses[reg] += ((self.regularizer["train"][reg]["loss"](
                                out["pos_d_{}".format(targeted_rep)]) * lambda_d).mean() +
                                                           (self.regularizer["train"][reg]["loss"](
                                                               out["neg_d_{}".format(
                                                                   targeted_rep)]) * lambda_d).mean()) / 2
                        loss += sum(regularization_losses.values())
                with torch.no_grad():
                    monitor_losses = {}
                    for reg in self.regularizer["eval"]:
                        monitor_losses["{}_q".format(reg)] = self.regularizer["eval"][reg]["loss"](
                            out["pos_q_rep"]).mean()
                        # again, we can choose pos_q_rep or neg_q_rep indifferently
                        monitor_losses["{}_d".format(reg)] = (self.regularizer["eval"][reg]["loss"](
                            out["pos_d_rep"]).mean() + self.regularizer["eval"][reg]["loss"](
                            out["neg_d_rep"]).mean()) / 2
        loss = loss / self.config["gradient_accumulation_steps"]
        return loss, moving_avg_ranking_loss

    def forward(self, batch):
        # for this trainer, the batch contains query, pos doc and neg doc HF formatted inputs
        q_kwargs = parse(batch, "q")
        d_pos_kwargs = parse(batch, "pos")
        d_neg_kwargs = parse(batch, "neg")
        d_pos_args = {"q_kwargs": q_kwargs, "d_kwargs": d_pos_kwargs}
        d_neg_args = {"q_kwargs": q_kwargs, "d_kwargs": d_neg_kwargs}
        if "augment_pairs" in self.config:
            if self.config["augment_pairs"] == "in_batch_negatives":
                d_pos_args["score_batch"] = True
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


def build_trainer(device="cpu"):
    torch.manual_seed(0)
    model = Splade(TinyConfig(), agg="max", fp16=False)
    model.train()
    regularizer = {
        "train": {"FLOPS": {"lambdas": {"lambda_q": RegWeightScheduler(3e-4, 3),
                                        "lambda_d": RegWeightScheduler(1e-4, 3)},
                            "targeted_rep": "rep", "loss": FLOPS()}},
        "eval": {"L0": {"loss": L0()}, "FLOPS": {"loss": FLOPS()}},
    }
    trainer = SiameseTransformerTrainer(model, PairwiseNLL(), regularizer,
                                        {"gradient_accumulation_steps": 2}, device)
    return trainer


def train(n_iter=2):
    trainer = build_trainer()
    step = torch.compile(trainer.train_iteration)
    moving_avg_ranking_loss = 0
    for i in range(n_iter):
        loss, moving_avg_ranking_loss = step(make_batch(), moving_avg_ranking_loss)
        loss.backward()


def make():
    trainer = build_trainer()
    return trainer.train_iteration, [(make_batch(), 0), (make_batch(), 0.5)]
