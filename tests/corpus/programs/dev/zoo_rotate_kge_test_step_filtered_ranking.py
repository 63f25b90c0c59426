"""RotatE filtered evaluation: score all candidates, add the filter bias, argsort, and rank each positive with `nonzero()` / `assert` / `.item()` in a Python loop over the batch.

Source: DeepGraphLearning/KnowledgeGraphEmbedding@617062aaedf53bf4d6b44450a580a96dc30e0632:codes/model.py:303-409
Kept: KGEModel (RotatE path, `self.gamma.item()` in the score) and the inner body of
test_step's loop verbatim (model call, `score += filter_bias`, argsort, head/tail
positive_arg choice, per-row ranking via nonzero + assert + item, HITS dict, the
`test_log_steps` logging.info).
Simplified: one batch is passed in instead of iterating the two DataLoaders, so `step`
and `total_steps` are arguments; the metric averaging is left to the caller.
TransE/DistMult/ComplEx/pRotatE dropped; 10 entities, 3 relations, hidden_dim 4.
"""
import argparse
import logging

import torch
import torch.nn as nn


class KGEModel(nn.Module):
    def __init__(self, model_name, nentity, nrelation, hidden_dim, gamma,
                 double_entity_embedding=False, double_relation_embedding=False):
        super(KGEModel, self).__init__()
        self.model_name = model_name
        self.nentity = nentity
        self.nrelation = nrelation
        self.hidden_dim = hidden_dim
        self.epsilon = 2.0

        self.gamma = nn.Parameter(
            torch.Tensor([gamma]),
            requires_grad=False
        )

        self.embedding_range = nn.Parameter(
            torch.Tensor([(self.gamma.item() + self.epsilon) / hidden_dim]),
            requires_grad=False
        )

        self.entity_dim = hidden_dim*2 if double_entity_embedding else hidden_dim
        self.relation_dim = hidden_dim*2 if double_relation_embedding else hidden_dim

        self.entity_embedding = nn.Parameter(torch.zeros(nentity, self.entity_dim))
        nn.init.uniform_(
            tensor=self.entity_embedding,
            a=-self.embedding_range.item(),
            b=self.embedding_range.item()
        )

        self.relation_embedding = nn.Parameter(torch.zeros(nrelation, self.relation_dim))
        nn.init.uniform_(
            tensor=self.relation_embedding,
            a=-self.embedding_range.item(),
            b=self.embedding_range.item()
        )

        #Do not forget to modify this line when you add a new model in the "forward" function
        if model_name not in ['TransE', 'DistMult', 'ComplEx', 'RotatE', 'pRotatE']:
            raise ValueError('model %s not supported' % model_name)

        if model_name == 'RotatE' and (not double_entity_embedding or double_relation_embedding):
            raise ValueError('RotatE should use --double_entity_embedding')

        if model_name == 'ComplEx' and (not double_entity_embedding or not double_relation_embedding):
            raise ValueError('ComplEx should use --double_entity_embedding and --double_relation_embedding')

    def forward(self, sample, mode='single'):
        if mode == 'single':
            batch_size, negative_sample_size = sample.size(0), 1

            head = torch.index_select(
                self.entity_embedding,
                dim=0,
                index=sample[:,0]
            ).unsqueeze(1)

            relation = torch.index_select(
                self.relation_embedding,
                dim=0,
                index=sample[:,1]
            ).unsqueeze(1)

            tail = torch.index_select(
                self.entity_embedding,
                dim=0,
                index=sample[:,2]
            ).unsqueeze(1)

        elif mode == 'head-batch':
            tail_part, head_part = sample
            batch_size, negative_sample_size = head_part.size(0), head_part.size(1)

            head = torch.index_select(
                self.entity_embedding,
                dim=0,
                index=head_part.view(-1)
            ).view(batch_size, negative_sample_size, -1)

            relation = torch.index_select(
                self.relation_embedding,
                dim=0,
                index=tail_part[:, 1]
            ).unsqueeze(1)

            tail = torch.index_select(
                self.entity_embedding,
                dim=0,
                index=tail_part[:, 2]
            ).unsqueeze(1)

        elif mode == 'tail-batch':
            head_part, tail_part = sample
            batch_size, negative_sample_size = tail_part.size(0), tail_part.size(1)

            head = torch.index_select(
                self.entity_embedding,
                dim=0,
                index=head_part[:, 0]
            ).unsqueeze(1)

            relation = torch.index_select(
                self.relation_embedding,
                dim=0,
                index=head_part[:, 1]
            ).unsqueeze(1)

            tail = torch.index_select(
                self.entity_embedding,
                dim=0,
                index=tail_part.view(-1)
            ).view(batch_size, negative_sample_size, -1)

        else:
            raise ValueError('mode %s not supported' % mode)

        model_func = {
            'RotatE': self.RotatE,
        }

        if self.model_name in model_func:
            score = model_func[self.model_name](head, relation, tail, mode)
        else:
            raise ValueError('model %s not supported' % self.model_name)

        return score

    def RotatE(self, head, relation, tail, mode):
        pi = 3.14159262358979323846

        re_head, im_head = torch.chunk(head, 2, dim=2)
        re_tail, im_tail = torch.chunk(tail, 2, dim=2)

        #Make phases of relations uniformly distributed in [-pi, pi]

        phase_relation = relation/(self.embedding_range.item()/pi)

        re_relation = torch.cos(phase_relation)
        im_relation = torch.sin(phase_relation)

        if mode == 'head-batch':
            re_score = re_relation * re_tail + im_relation * im_tail
            im_score = re_relation * im_tail - im_relation * re_tail
            re_score = re_score - re_head
            im_score = im_score - im_head
        else:
            re_score = re_head * re_relation - im_head * im_relation
            im_score = re_head * im_relation + im_head * re_relation
            re_score = re_score - re_tail
            im_score = im_score - im_tail

        score = torch.stack([re_score, im_score], dim = 0)
        score = score.norm(dim = 0)

        score = self.gamma.item() - score.sum(dim = 2)
        return score


def evaluate_batch(model, positive_sample, negative_sample, filter_bias, mode, args, step, total_steps):
    logs = []
    with torch.no_grad():
        if args.cuda:
            positive_sample = positive_sample.cuda()
            negative_sample = negative_sample.cuda()
            filter_bias = filter_bias.cuda()

        batch_size = positive_sample.size(0)

        score = model((positive_sample, negative_sample), mode)
        score += filter_bias

        #Explicitly sort all the entities to ensure that there is no test exposure bias
        argsort = torch.argsort(score, dim = 1, descending=True)

        if mode == 'head-batch':
            positive_arg = positive_sample[:, 0]
        elif mode == 'tail-batch':
            positive_arg = positive_sample[:, 2]
        else:
            raise ValueError('mode %s not supported' % mode)

        for i in range(batch_size):
            #Notice that argsort is not ranking
            ranking = (argsort[i, :] == positive_arg[i]).nonzero()
            assert ranking.size(0) == 1

            #ranking + 1 is the true ranking used in evaluation metrics
            ranking = 1 + ranking.item()
            logs.append({
                'MRR': 1.0/ranking,
                'MR': float(ranking),
                'HITS@1': 1.0 if ranking <= 1 else 0.0,
                'HITS@3': 1.0 if ranking <= 3 else 0.0,
                'HITS@10': 1.0 if ranking <= 10 else 0.0,
            })

        if step % args.test_log_steps == 0:
            logging.info('Evaluating the model... (%d/%d)' % (step, total_steps))

    return logs


def make():
    torch.manual_seed(0)
    nentity, nrelation = 10, 3
    model = KGEModel('RotatE', nentity, nrelation, 4, 12.0,
                     double_entity_embedding=True, double_relation_embedding=False).eval()
    positive = torch.tensor([[0, 1, 2], [3, 0, 4]])
    # TestDataset: every entity is a candidate; known true triples get a -1 bias
    candidates = torch.arange(nentity).repeat(2, 1)
    filter_bias = torch.zeros(2, nentity)
    filter_bias[0, 7] = -1.0
    filter_bias[1, 1] = -1.0
    args = argparse.Namespace(cuda=False, test_log_steps=2)
    return evaluate_batch, [
        (model, positive, candidates, filter_bias, 'head-batch', args, 0, 2),
        (model, positive, candidates, filter_bias, 'tail-batch', args, 1, 2),
    ]


evaluate_batch_compiled = torch.compile(evaluate_batch, dynamic=False)
