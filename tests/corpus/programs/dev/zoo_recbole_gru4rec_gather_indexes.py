"""RecBole GRU4Rec: `calculate_loss` reads the Interaction batch by field-name keys built in SequentialRecommender, runs `self.gru_layers(...)` (nn.GRU) and picks the last valid step with `gather_indexes(gru_output, item_seq_len - 1)`, then a BPR or CE loss chosen by config.

Source: RUCAIBox/RecBole@3b9ec35b6a98d421b33265862bfeff940287baf0:recbole/model/sequential_recommender/gru4rec.py:29-118
Also: recbole/model/abstract_recommender.py@025907ce (SequentialRecommender fields and
gather_indexes), recbole/model/loss.py (BPRLoss).
Kept: GRU4Rec verbatim (xavier init through self.apply, loss_type switch,
calculate_loss, predict, full_sort_predict), SequentialRecommender.__init__ and
gather_indexes verbatim.
Simplified: Interaction is a minimal dict wrapper, the dataset only answers num();
20 items, sequences of 6, embedding/hidden 8.
"""
import torch
from torch import nn
from torch.nn.init import xavier_uniform_, xavier_normal_


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


class GRU4Rec(SequentialRecommender):
    r"""GRU4Rec is a model that incorporate RNN for recommendation.
    """

    def __init__(self, config, dataset):
        super(GRU4Rec, self).__init__(config, dataset)

        # load parameters info
        self.embedding_size = config['embedding_size']
        self.hidden_size = config['hidden_size']
        self.loss_type = config['loss_type']
        self.num_layers = config['num_layers']
        self.dropout = config['dropout']

        # define layers and loss
        self.item_embedding = nn.Embedding(self.n_items, self.embedding_size, padding_idx=0)
        self.emb_dropout = nn.Dropout(self.dropout)
        self.gru_layers = nn.GRU(
            input_size=self.embedding_size,
            hidden_size=self.hidden_size,
            num_layers=self.num_layers,
            bias=False,
            batch_first=True,
        )
        self.dense = nn.Linear(self.hidden_size, self.embedding_size)
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
            xavier_normal_(module.weight)
        elif isinstance(module, nn.GRU):
            xavier_uniform_(self.gru_layers.weight_hh_l0)
            xavier_uniform_(self.gru_layers.weight_ih_l0)

    def forward(self, item_seq, item_seq_len):
        item_seq_emb = self.item_embedding(item_seq)
        item_seq_emb_dropout = self.emb_dropout(item_seq_emb)
        gru_output, _ = self.gru_layers(item_seq_emb_dropout)
        gru_output = self.dense(gru_output)
        # the embedding of the predicted item, shape of (batch_size, embedding_size)
        seq_output = self.gather_indexes(gru_output, item_seq_len - 1)
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
        item_seq = interaction[self.ITEM_SEQ]
        item_seq_len = interaction[self.ITEM_SEQ_LEN]
        test_item = interaction[self.ITEM_ID]
        seq_output = self.forward(item_seq, item_seq_len)
        test_item_emb = self.item_embedding(test_item)
        scores = torch.mul(seq_output, test_item_emb).sum(dim=1)  # [B]
        return scores

    def full_sort_predict(self, interaction):
        item_seq = interaction[self.ITEM_SEQ]
        item_seq_len = interaction[self.ITEM_SEQ_LEN]
        seq_output = self.forward(item_seq, item_seq_len)
        test_items_emb = self.item_embedding.weight
        scores = torch.matmul(seq_output, test_items_emb.transpose(0, 1))  # [B, n_items]
        return scores


def build_model():
    model_config = dict(config, loss_type='BPR', num_layers=1, dropout=0.2)
    return GRU4Rec(model_config, Dataset(20))


model = build_model()
compiled_calculate_loss = torch.compile(model.calculate_loss)


def make():
    torch.manual_seed(0)
    model = build_model()
    batch = Interaction({
        'item_id_list': torch.tensor([[3, 7, 2, 0, 0, 0], [5, 1, 9, 4, 8, 6], [11, 0, 0, 0, 0, 0]]),
        'item_length': torch.tensor([3, 6, 1]),
        'item_id': torch.tensor([4, 2, 13]),
        'neg_item_id': torch.tensor([17, 12, 5]),
    })
    return model.calculate_loss, [(batch,)]
