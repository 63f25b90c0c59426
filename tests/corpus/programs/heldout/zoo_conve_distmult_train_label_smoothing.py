"""DistMult training step: binary multi-target labels from the batch dict, label smoothing with `e2_multi.size(1)`, BCELoss, backward and Adam step, loss stored on the batcher state.

Source: TimDettmers/ConvE@2a2e096aa9b14672aef7ec9c7c21522248e7f7e7:main.py:144-157 (loop body), model.py:55-79 (DistMult)
Kept: the body of the training loop over `train_batcher` verbatim (`opt.zero_grad()`,
the `str2var[...]` lookups, `.float()`, label smoothing from
`Config.label_smoothing_epsilon`, `model.forward`, `model.loss`, `loss.backward()`,
`opt.step()`, `train_batcher.state.loss = loss`) and DistMult with its global
`Config` reads.
Simplified: the loop body is a function taking the batch dict (the way one compiles
a step); spodernet's StreamBatcher reduced to an object with a `state`; 20
entities, embedding size 8, batch size 4.
"""
import torch
from torch.nn import functional as F
from torch.nn.init import xavier_normal_


class Config:
    batch_size = 4
    embedding_dim = 8
    input_dropout = 0.2
    label_smoothing_epsilon = 0.1
    learning_rate = 0.003
    L2 = 0.0


class DistMult(torch.nn.Module):
    def __init__(self, num_entities, num_relations):
        super(DistMult, self).__init__()
        self.emb_e = torch.nn.Embedding(num_entities, Config.embedding_dim, padding_idx=0)
        self.emb_rel = torch.nn.Embedding(num_relations, Config.embedding_dim, padding_idx=0)
        self.inp_drop = torch.nn.Dropout(Config.input_dropout)
        self.loss = torch.nn.BCELoss()

    def init(self):
        xavier_normal_(self.emb_e.weight.data)
        xavier_normal_(self.emb_rel.weight.data)

    def forward(self, e1, rel):
        e1_embedded= self.emb_e(e1)
        rel_embedded= self.emb_rel(rel)
        e1_embedded = e1_embedded.view(-1, Config.embedding_dim)
        rel_embedded = rel_embedded.view(-1, Config.embedding_dim)

        e1_embedded = self.inp_drop(e1_embedded)
        rel_embedded = self.inp_drop(rel_embedded)

        pred = torch.mm(e1_embedded*rel_embedded, self.emb_e.weight.transpose(1,0))
        pred = F.sigmoid(pred)

        return pred


class BatcherState:
    def __init__(self):
        self.loss = None


class StreamBatcher:
    def __init__(self):
        self.state = BatcherState()


def train_batch(model, opt, train_batcher, str2var):
    opt.zero_grad()
    e1 = str2var['e1']
    rel = str2var['rel']
    e2_multi = str2var['e2_multi1_binary'].float()
    # label smoothing
    e2_multi = ((1.0-Config.label_smoothing_epsilon)*e2_multi) + (1.0/e2_multi.size(1))

    pred = model.forward(e1, rel)
    loss = model.loss(pred, e2_multi)
    loss.backward()
    opt.step()

    train_batcher.state.loss = loss
    return loss


compiled_train_batch = torch.compile(train_batch)


def make():
    torch.manual_seed(0)
    num_entities = 20
    model = DistMult(num_entities, 6)
    model.init()
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=Config.learning_rate, weight_decay=Config.L2)
    batcher = StreamBatcher()
    binary = torch.zeros(Config.batch_size, num_entities, dtype=torch.int64)
    binary[0, 3] = 1
    binary[1, 4] = 1
    binary[1, 9] = 1
    binary[2, 11] = 1
    binary[3, 2] = 1
    str2var = {
        'e1': torch.tensor([[1], [5], [7], [19]]),
        'rel': torch.tensor([[1], [2], [3], [5]]),
        'e2_multi1_binary': binary,
    }
    return train_batch, [(model, opt, batcher, str2var)]
