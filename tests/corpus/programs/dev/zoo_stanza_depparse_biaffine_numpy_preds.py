"""Stanza's GraphParser: DeepBiaffineScorer arc and relation scores with the linearization/distance terms; training computes the loss, evaluation returns predictions through `.detach().cpu().numpy()`.

Source: stanfordnlp/stanza@1f4bfdd2bff400969444cf9f290d402448c9d6d5:stanza/models/depparse/model.py:240-370
Also: stanza/models/common/biaffine.py (PairwiseBilinear, PairwiseBiaffineScorer,
BiaffineScorer, DeepBiaffineScorer), stanza/models/common/vocab.py (VOCAB_PREFIX_SIZE).
Kept: the biaffine modules verbatim, GraphParser's classifier construction
from the args dict (args.get('use_arc_embedding'), linearization, distance),
forward_scores and forward verbatim (both the training loss and the eval
numpy predictions).
Simplified: EmbeddingParser.embed (word/char/pretrained embeddings and the
HighwayLSTM) is a linear projection of ready word features; hidden 4,
3 relations, sentences of 5 tokens including ROOT.
"""
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger('stanza')

VOCAB_PREFIX_SIZE = 4


class PairwiseBilinear(nn.Module):
    def __init__(self, input1_size, input2_size, output_size, bias=True):
        super().__init__()

        self.input1_size = input1_size
        self.input2_size = input2_size
        self.output_size = output_size

        self.weight = nn.Parameter(torch.Tensor(input1_size, input2_size, output_size))
        self.bias = nn.Parameter(torch.Tensor(output_size)) if bias else 0

    def forward(self, input1, input2):
        input1_size = list(input1.size())
        input2_size = list(input2.size())
        output_size = [input1_size[0], input1_size[1], input2_size[1], self.output_size]

        intermediate = torch.einsum("NLI,IJO->NLJO", input1, self.weight)
        output = torch.einsum("NLJO,NMJ->NLMO", intermediate, input2)
        output = output + self.bias.expand(output.shape)

        return output


class PairwiseBiaffineScorer(nn.Module):
    def __init__(self, input1_size, input2_size, output_size):
        super().__init__()
        self.W_bilin = PairwiseBilinear(input1_size + 1, input2_size + 1, output_size)

        self.W_bilin.weight.data.normal_()
        self.W_bilin.bias.data.zero_()

    def forward(self, input1, input2):
        input1 = torch.cat([input1, input1.new_ones(*input1.size()[:-1], 1)], len(input1.size())-1)
        input2 = torch.cat([input2, input2.new_ones(*input2.size()[:-1], 1)], len(input2.size())-1)
        return self.W_bilin(input1, input2)


class BiaffineScorer(nn.Module):
    def __init__(self, input1_size, input2_size, output_size):
        super().__init__()
        self.W_bilin = nn.Bilinear(input1_size + 1, input2_size + 1, output_size)

        self.W_bilin.weight.data.zero_()
        self.W_bilin.bias.data.zero_()

    def forward(self, input1, input2):
        input1 = torch.cat([input1, input1.new_ones(*input1.size()[:-1], 1)], len(input1.size())-1)
        input2 = torch.cat([input2, input2.new_ones(*input2.size()[:-1], 1)], len(input2.size())-1)
        return self.W_bilin(input1, input2)


class DeepBiaffineScorer(nn.Module):
    def __init__(self, input1_size, input2_size, hidden_size, output_size, hidden_func=F.relu, dropout=0, pairwise=True):
        super().__init__()
        self.W1 = nn.Linear(input1_size, hidden_size)
        self.W2 = nn.Linear(input2_size, hidden_size)
        self.hidden_func = hidden_func
        if pairwise:
            self.scorer = PairwiseBiaffineScorer(hidden_size, hidden_size, output_size)
        else:
            self.scorer = BiaffineScorer(hidden_size, hidden_size, output_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input1, input2):
        return self.scorer(self.dropout(self.hidden_func(self.W1(input1))), self.dropout(self.hidden_func(self.W2(input2))))


class GraphParser(nn.Module):
    def __init__(self, args, num_relations, feature_dim):
        super().__init__()
        self.args = args
        self.num_relations = num_relations
        self.drop = nn.Dropout(args['dropout'])
        self.input_proj = nn.Linear(feature_dim, 2 * self.args['hidden_dim'])

        # classifiers
        # args.get to preserve old models, including models other people might have created
        if self.args.get('use_arc_embedding'):
            logger.debug("Using arc embedding enhancement")
            self.arc_embedding = DeepBiaffineScorer(2 * self.args['hidden_dim'], 2 * self.args['hidden_dim'], self.args['deep_biaff_hidden_dim'], self.args['deep_biaff_output_dim'], pairwise=True, dropout=self.args['dropout'])
            self.unlabeled_linear = nn.Sequential(self.drop,
                                                  nn.Linear(self.args['deep_biaff_output_dim'], 1))
            self.deprel_linear = nn.Sequential(self.drop,
                                               nn.Linear(self.args['deep_biaff_output_dim'], 2 * self.args['deep_biaff_output_dim']),
                                               nn.ReLU(),
                                               self.drop,
                                               nn.Linear(self.args['deep_biaff_output_dim'] * 2, self.num_relations))
        else:
            logger.debug("Not using arc embedding enhancement")
            self.unlabeled = DeepBiaffineScorer(2 * self.args['hidden_dim'], 2 * self.args['hidden_dim'], self.args['deep_biaff_hidden_dim'], 1, pairwise=True, dropout=self.args['dropout'])
            self.deprel = DeepBiaffineScorer(2 * self.args['hidden_dim'], 2 * self.args['hidden_dim'], self.args['deep_biaff_hidden_dim'], self.num_relations, pairwise=True, dropout=self.args['dropout'])
        if self.args['linearization']:
            self.linearization = DeepBiaffineScorer(2 * self.args['hidden_dim'], 2 * self.args['hidden_dim'], self.args['deep_biaff_hidden_dim'], 1, pairwise=True, dropout=self.args['dropout'])
        if self.args['distance']:
            self.distance = DeepBiaffineScorer(2 * self.args['hidden_dim'], 2 * self.args['hidden_dim'], self.args['deep_biaff_hidden_dim'], 1, pairwise=True, dropout=self.args['dropout'])

        # criterion
        self.crit = nn.CrossEntropyLoss(ignore_index=-1, reduction='sum') # ignore padding

    def embed(self, word, word_mask, wordchars, features):
        return self.input_proj(features)

    def forward_scores(self, word, word_mask, wordchars, head, deprel, features):
        lstm_outputs = self.embed(word, word_mask, wordchars, features)

        if self.args.get('use_arc_embedding'):
            arc_scores = self.arc_embedding(self.drop(lstm_outputs), self.drop(lstm_outputs))
            unlabeled_scores = self.unlabeled_linear(arc_scores).squeeze(3)
            deprel_scores = self.deprel_linear(arc_scores).squeeze(3)
        else:
            unlabeled_scores = self.unlabeled(self.drop(lstm_outputs), self.drop(lstm_outputs)).squeeze(3)
            deprel_scores = self.deprel(self.drop(lstm_outputs), self.drop(lstm_outputs))

        head_offset = None
        if self.args['linearization'] or self.args['distance']:
            head_offset = torch.arange(word.size(1), device=head.device).view(1, 1, -1).expand(word.size(0), -1, -1) - torch.arange(word.size(1), device=head.device).view(1, -1, 1).expand(word.size(0), -1, -1)

        lin_scores = None
        if self.args['linearization']:
            lin_scores = self.linearization(self.drop(lstm_outputs), self.drop(lstm_outputs)).squeeze(3)
            unlabeled_scores += F.logsigmoid(lin_scores * torch.sign(head_offset).float()).detach()

        dist_kld = None
        if self.args['distance']:
            dist_scores = self.distance(self.drop(lstm_outputs), self.drop(lstm_outputs)).squeeze(3)
            dist_pred = 1 + F.softplus(dist_scores)
            dist_target = torch.abs(head_offset)
            dist_kld = -torch.log((dist_target.float() - dist_pred)**2/2 + 1)
            unlabeled_scores += dist_kld.detach()

        diag = torch.eye(head.size(-1)+1, dtype=torch.bool, device=head.device).unsqueeze(0)
        unlabeled_scores.masked_fill_(diag, -float('inf'))

        return unlabeled_scores, deprel_scores, head_offset, lin_scores, dist_kld

    def forward(self, word, word_mask, wordchars, head, deprel, features):
        unlabeled_scores, deprel_scores, head_offset, lin_scores, dist_kld = self.forward_scores(word, word_mask, wordchars, head, deprel, features)

        preds = []
        if self.training:
            unlabeled_scores = unlabeled_scores[:, 1:, :] # exclude attachment for the root symbol
            unlabeled_scores = unlabeled_scores.masked_fill(word_mask.unsqueeze(1), -float('inf'))
            unlabeled_target = head.masked_fill(word_mask[:, 1:], -1)
            loss = self.crit(unlabeled_scores.contiguous().view(-1, unlabeled_scores.size(2)), unlabeled_target.view(-1))

            deprel_scores = deprel_scores[:, 1:] # exclude attachment for the root symbol
            deprel_scores = torch.gather(deprel_scores, 2, head.unsqueeze(2).unsqueeze(3).expand(-1, -1, -1, self.num_relations)).view(-1, self.num_relations)
            deprel_target = deprel - VOCAB_PREFIX_SIZE
            deprel_target = deprel_target.masked_fill(word_mask[:, 1:], -1)
            loss += self.crit(deprel_scores.contiguous(), deprel_target.view(-1))

            if self.args['linearization']:
                lin_scores = torch.gather(lin_scores[:, 1:], 2, head.unsqueeze(2)).view(-1)
                lin_scores = torch.cat([-lin_scores.unsqueeze(1)/2, lin_scores.unsqueeze(1)/2], 1)
                lin_target = torch.gather((head_offset[:, 1:] > 0).long(), 2, head.unsqueeze(2))
                loss += self.crit(lin_scores.contiguous(), lin_target.view(-1))

            if self.args['distance']:
                # dist_kld[:, 1:] so that the root isn't included in the distance calculation
                dist_kld = torch.gather(dist_kld[:, 1:], 2, head.unsqueeze(2))
                loss -= dist_kld.sum()

            loss /= wordchars.size(0) # number of words
        else:
            loss = 0
            preds.append(F.log_softmax(unlabeled_scores, 2).detach().cpu().numpy())
            preds.append(deprel_scores.max(3)[1].detach().cpu().numpy() + VOCAB_PREFIX_SIZE)
            preds.append(F.log_softmax(deprel_scores, 3).detach().cpu().numpy())

        return loss, preds


ARGS = {'hidden_dim': 4, 'deep_biaff_hidden_dim': 6, 'deep_biaff_output_dim': 5, 'dropout': 0.1,
        'linearization': True, 'distance': True}


def build_parser():
    return GraphParser(ARGS, num_relations=3, feature_dim=7)


parser = torch.compile(build_parser().eval())


def make():
    torch.manual_seed(0)
    word = torch.randint(1, 20, (2, 5))
    word_mask = torch.zeros(2, 5, dtype=torch.bool)
    word_mask[1, 4] = True
    wordchars = torch.randint(1, 20, (8, 3))
    head = torch.tensor([[0, 1, 1, 3], [2, 0, 2, 0]])
    deprel = torch.tensor([[4, 5, 6, 4], [5, 4, 6, 4]])
    features = torch.randn(2, 5, 7)
    return build_parser().eval(), [(word, word_mask, wordchars, head, deprel, features)]
