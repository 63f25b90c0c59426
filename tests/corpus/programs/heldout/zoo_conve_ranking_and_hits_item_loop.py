"""ConvE filtered ranking evaluation: per-example `.item()` lookups, in-place filtering of known answers, `torch.sort`, `.cpu().numpy()` and `np.where` ranks, Hits@k lists and logging.

Source: TimDettmers/ConvE@14db6609ae216f86b1d19d5b6b0c6048cc3e40b0:evaluation.py:12-102
Kept: `ranking_and_hits` verbatim (both loops over `Config.batch_size`, the
`.item()` target values, `pred1[i][filter1] = 0.0`, the sort/argsort to numpy,
`np.where(...)[0][0]`, the hits_level loop, the `log.info` summary, the
`dev_rank_batcher.state.loss = [0]` reset) and DistMult (model.py) as the model.
Simplified: spodernet's Logger and StreamBatcher replaced by small classes with the
same calls (the logger prints); 12 entities, batch size 2, two batches; filters
padded with entity 0 as spodernet pads them.
"""
import numpy as np
import torch
from torch.nn import functional as F
from torch.nn.init import xavier_normal_


class Config:
    batch_size = 2
    embedding_dim = 8
    input_dropout = 0.2


class Logger:
    def __init__(self, name):
        self.name = name

    def info(self, message, *args):
        print(message.format(*args))


log = Logger('evaluation.py.txt')


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
    def __init__(self, batches):
        self.batches = batches
        self.state = BatcherState()

    def __iter__(self):
        return iter(self.batches)


def ranking_and_hits(model, dev_rank_batcher, vocab, name):
    log.info('')
    log.info('-'*50)
    log.info(name)
    log.info('-'*50)
    log.info('')
    hits_left = []
    hits_right = []
    hits = []
    ranks = []
    ranks_left = []
    ranks_right = []
    for i in range(10):
        hits_left.append([])
        hits_right.append([])
        hits.append([])

    for i, str2var in enumerate(dev_rank_batcher):
        e1 = str2var['e1']
        e2 = str2var['e2']
        rel = str2var['rel']
        rel_reverse = str2var['rel_eval']
        e2_multi1 = str2var['e2_multi1'].float()
        e2_multi2 = str2var['e2_multi2'].float()
        pred1 = model.forward(e1, rel)
        pred2 = model.forward(e2, rel_reverse)
        pred1, pred2 = pred1.data, pred2.data
        e1, e2 = e1.data, e2.data
        e2_multi1, e2_multi2 = e2_multi1.data, e2_multi2.data
        for i in range(Config.batch_size):
            # these filters contain ALL labels
            filter1 = e2_multi1[i].long()
            filter2 = e2_multi2[i].long()

            num = e1[i, 0].item()
            # save the prediction that is relevant
            target_value1 = pred1[i,e2[i, 0].item()].item()
            target_value2 = pred2[i,e1[i, 0].item()].item()
            # zero all known cases (this are not interesting)
            # this corresponds to the filtered setting
            pred1[i][filter1] = 0.0
            pred2[i][filter2] = 0.0
            # write base the saved values
            pred1[i][e2[i]] = target_value1
            pred2[i][e1[i]] = target_value2


        # sort and rank
        max_values, argsort1 = torch.sort(pred1, 1, descending=True)
        max_values, argsort2 = torch.sort(pred2, 1, descending=True)

        argsort1 = argsort1.cpu().numpy()
        argsort2 = argsort2.cpu().numpy()
        for i in range(Config.batch_size):
            # find the rank of the target entities
            rank1 = np.where(argsort1[i]==e2[i, 0].item())[0][0]
            rank2 = np.where(argsort2[i]==e1[i, 0].item())[0][0]
            # rank+1, since the lowest rank is rank 1 not rank 0
            ranks.append(rank1+1)
            ranks_left.append(rank1+1)
            ranks.append(rank2+1)
            ranks_right.append(rank2+1)

            # this could be done more elegantly, but here you go
            for hits_level in range(10):
                if rank1 <= hits_level:
                    hits[hits_level].append(1.0)
                    hits_left[hits_level].append(1.0)
                else:
                    hits[hits_level].append(0.0)
                    hits_left[hits_level].append(0.0)

                if rank2 <= hits_level:
                    hits[hits_level].append(1.0)
                    hits_right[hits_level].append(1.0)
                else:
                    hits[hits_level].append(0.0)
                    hits_right[hits_level].append(0.0)

        dev_rank_batcher.state.loss = [0]

    for i in range(10):
        log.info('Hits left @{0}: {1}'.format(i+1, np.mean(hits_left[i])))
        log.info('Hits right @{0}: {1}'.format(i+1, np.mean(hits_right[i])))
        log.info('Hits @{0}: {1}'.format(i+1, np.mean(hits[i])))
    log.info('Mean rank left: {0}', np.mean(ranks_left))
    log.info('Mean rank right: {0}', np.mean(ranks_right))
    log.info('Mean rank: {0}', np.mean(ranks))
    log.info('Mean reciprocal rank left: {0}', np.mean(1./np.array(ranks_left)))
    log.info('Mean reciprocal rank right: {0}', np.mean(1./np.array(ranks_right)))
    log.info('Mean reciprocal rank: {0}', np.mean(1./np.array(ranks)))


evaluate = torch.compile(ranking_and_hits)


def make():
    torch.manual_seed(0)
    model = DistMult(12, 4)
    model.init()
    model.eval()
    batches = [
        {
            'e1': torch.tensor([[1], [4]]),
            'e2': torch.tensor([[3], [7]]),
            'rel': torch.tensor([[1], [2]]),
            'rel_eval': torch.tensor([[2], [3]]),
            'e2_multi1': torch.tensor([[3, 5, 0], [7, 0, 0]]),
            'e2_multi2': torch.tensor([[1, 0, 0], [4, 9, 11]]),
        },
        {
            'e1': torch.tensor([[10], [2]]),
            'e2': torch.tensor([[6], [8]]),
            'rel': torch.tensor([[3], [1]]),
            'rel_eval': torch.tensor([[1], [2]]),
            'e2_multi1': torch.tensor([[6, 2, 0], [8, 0, 0]]),
            'e2_multi2': torch.tensor([[10, 0, 0], [2, 3, 0]]),
        },
    ]
    vocab = {}
    return ranking_and_hits, [(model, StreamBatcher(batches), vocab, 'dev_evaluation')]
