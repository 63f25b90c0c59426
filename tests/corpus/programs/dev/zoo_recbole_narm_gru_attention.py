"""RecBole NARM: `full_sort_predict` runs `self.gru(...)`, takes the last valid step with `gather_indexes`, masks padding with `item_seq.gt(0)` inside the attention weights, and reads `dropout_probs[0]`/`[1]` and `device` from the config dict.

Source: RUCAIBox/RecBole@025907cec044fe9760f409069e86d30ee5490d2d:recbole/model/sequential_recommender/narm.py:30-124
Also: recbole/model/abstract_recommender.py@025907ce (SequentialRecommender fields and
gather_indexes), recbole/model/loss.py (BPRLoss).
Kept: NARM verbatim (init, loss_type switch, forward, calculate_loss,
full_sort_predict), SequentialRecommender.__init__ and gather_indexes verbatim.
Simplified: Interaction is a minimal dict wrapper, the dataset only answers num();
20 items, sequences of 6, embedding/hidden 8; the model is compiled in eval mode for
full-sort evaluation as RecBole's evaluator calls it.
"""
import torch
from torch import nn
from torch.nn.init import xavier_normal_, constant_


class Interaction:
    """The dict-like batch RecBole's trainer hands to calculate_loss / full_sort_predict."""

    def __init__(self, interaction):
        self.interaction = interaction

    def __getitem__(self, index):
        return self.interaction[index]


class Dataset:
    def __init__(self, num_items):
        self.num_items = num_items

    def num(self, field):
        return self.num_items


config = {
    'USER_ID_FIELD': 'user_id',
    'ITEM_ID_FIELD': 'item_id',
    'LIST_SUFFIX': '_list',
    'ITEM_LIST_LENGTH_FIELD': 'item_length',
    'NEG_PREFIX': 'neg_',
    'MAX_ITEM_LIST_LENGTH': 6,
    'embedding_size': 8,
    'hidden_size': 8,
    'device': 'cpu',
}


class BPRLoss(nn.Module):
    """ BPRLoss, based on Bayesian Personalized Ranking"""

    def __init__(self, gamma=1e-10):
        super(BPRLoss, self).__init__()
        self.gamma = gamma

    def forward(self, pos_score, neg_score):
        loss = -torch.log(self.gamma + torch.sigmoid(pos_score - neg_score)).mean()
        return loss


class AbstractRecommender(nn.Module):
    r"""Base class for all models
    """

    def calculate_loss(self, interaction):
        raise NotImplementedError

    def predict(self, interaction):
        raise NotImplementedError

    def full_sort_predict(self, interaction):
        raise NotImplementedError


class SequentialRecommender(AbstractRecommender):
    """
    This is a abstract sequential recommender. All the sequential model should implement This class.
    """

    def __init__(self, config, dataset):
        super(SequentialRecommender, self).__init__()

        # load dataset info
        self.USER_ID = config['USER_ID_FIELD']
        self.ITEM_ID = config['ITEM_ID_FIELD']
        self.ITEM_SEQ = self.ITEM_ID + config['LIST_SUFFIX']
        self.ITEM_SEQ_LEN = config['ITEM_LIST_LENGTH_FIELD']
        self.POS_ITEM_ID = self.ITEM_ID
        self.NEG_ITEM_ID = config['NEG_PREFIX'] + self.ITEM_ID
        self.max_seq_length = config['MAX_ITEM_LIST_LENGTH']
        self.n_items = dataset.num(self.ITEM_ID)

    def gather_indexes(self, output, gather_index):
        """Gathers the vectors at the spexific positions over a minibatch"""
        gather_index = gather_index.view(-1, 1, 1).expand(-1, -1, output.shape[-1])
        output_tensor = output.gather(dim=1, index=gather_index)
        return output_tensor.squeeze(1)


class NARM(SequentialRecommender):
    r"""NARM explores a hybrid encoder with an attention mechanism to model the user's sequential behavior,
    and capture the user's main purpose in the current session.

    """

    def __init__(self, config, dataset):
        super(NARM, self).__init__(config, dataset)

        # load parameters info
        self.embedding_size = config['embedding_size']
        self.hidden_size = config['hidden_size']
        self.n_layers = config['n_layers']
        self.dropout_probs = config['dropout_probs']
        self.device = config['device']

        # define layers and loss
        self.item_embedding = nn.Embedding(self.n_items, self.embedding_size, padding_idx=0)
        self.emb_dropout = nn.Dropout(self.dropout_probs[0])
        self.gru = nn.GRU(self.embedding_size, self.hidden_size, self.n_layers, bias=False, batch_first=True)
        self.a_1 = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.a_2 = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.v_t = nn.Linear(self.hidden_size, 1, bias=False)
        self.ct_dropout = nn.Dropout(self.dropout_probs[1])
        self.b = nn.Linear(2 * self.hidden_size, self.embedding_size, bias=False)
        self.loss_type = config['loss_type']
        if self.loss_type == 'BPR':
            self.loss_fct = BPRLoss()
        elif self.loss_type == 'CE':
            self.loss_fct = nn.CrossEntropyLoss()
        else:
            raise NotImplementedError("Make sure 'loss_type' in ['BPR', 'CE']!")

        # parameters initialization
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Embedding):
            xavier_normal_(module.weight.data)
        elif isinstance(module, nn.Linear):
            xavier_normal_(module.weight.data)
            if module.bias is not None:
                constant_(module.bias.data, 0)

    def forward(self, item_seq, item_seq_len):

        item_seq_emb = self.item_embedding(item_seq)
        item_seq_emb_dropout = self.emb_dropout(item_seq_emb)
        gru_out, _ = self.gru(item_seq_emb_dropout)

        # fetch the last hidden state of last timestamp
        c_global = ht = self.gather_indexes(gru_out, item_seq_len - 1)
        # avoid the influence of padding
        mask = item_seq.gt(0).unsqueeze(2).expand_as(gru_out)
        q1 = self.a_1(gru_out)
        q2 = self.a_2(ht)
        q2_expand = q2.unsqueeze(1).expand_as(q1)
        # calculate weighted factors α
        alpha = self.v_t(mask * torch.sigmoid(q1 + q2_expand))
        c_local = torch.sum(alpha.expand_as(gru_out) * gru_out, 1)
        c_t = torch.cat([c_local, c_global], 1)
        c_t = self.ct_dropout(c_t)
        seq_output = self.b(c_t)
        return seq_output

    def calculate_loss(self, interaction):
        item_seq = interaction[self.ITEM_SEQ]
        item_seq_len = interaction[self.ITEM_SEQ_LEN]
        seq_output = self.forward(item_seq, item_seq_len)
        pos_items = interaction[self.POS_ITEM_ID]
        if self.loss_type == 'BPR':
            neg_items = interaction[self.NEG_ITEM_ID]
            pos_items_emb = self.item_embedding(pos_items)
            neg_items_emb = self.item_embedding(neg_items)
            pos_score = torch.sum(seq_output * pos_items_emb, dim=-1)  # [B]
            neg_score = torch.sum(seq_output * neg_items_emb, dim=-1)  # [B]
            loss = self.loss_fct(pos_score, neg_score)
            return loss
        else:  # self.loss_type = 'CE'
            test_item_emb = self.item_embedding.weight
            logits = torch.matmul(seq_output, test_item_emb.transpose(0, 1))
            loss = self.loss_fct(logits, pos_items)
            return loss

    def predict(self, interaction):
        pass

    def full_sort_predict(self, interaction):
        item_seq = interaction[self.ITEM_SEQ]
        item_seq_len = interaction[self.ITEM_SEQ_LEN]
        seq_output = self.forward(item_seq, item_seq_len)
        test_item_emb = self.item_embedding.weight
        scores = torch.matmul(seq_output, test_item_emb.transpose(0, 1))
        return scores


def build_model():
    model_config = dict(config, loss_type='CE', n_layers=1, dropout_probs=[0.25, 0.5])
    return NARM(model_config, Dataset(20)).eval()


model = build_model()
full_sort_predict = torch.compile(model.full_sort_predict)


def make():
    torch.manual_seed(0)
    model = build_model()
    batch = Interaction({
        'item_id_list': torch.tensor([[3, 7, 2, 0, 0, 0], [5, 1, 9, 4, 8, 6], [11, 0, 0, 0, 0, 0]]),
        'item_length': torch.tensor([3, 6, 1]),
    })
    short = Interaction({
        'item_id_list': torch.tensor([[4, 2, 0, 0, 0, 0]]),
        'item_length': torch.tensor([2]),
    })
    return model.full_sort_predict, [(batch,), (short,)]
