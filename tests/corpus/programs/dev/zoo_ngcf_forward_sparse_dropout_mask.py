"""NGCF forward: node dropout on a sparse COO adjacency (`x._indices()` / `x._values()` filtered by a bool mask from `torch.floor(...)`, rebuilt with `torch.sparse.FloatTensor`), `torch.sparse.mm` propagation, `nn.LeakyReLU(...)` / `nn.Dropout(...)` built inside the layer loop, list-index embedding look-ups.

Source: huangtinglin/NGCF-PyTorch@fe877b03afdbc26848ca9ab073d0a8a101197417:NGCF/NGCF.py:12-150
Also: NGCF/main.py (2230f6da8737c5b1a93796af7d3957878e00b3b5) calls
`model(users, pos_items, neg_items, drop_flag=args.node_dropout_flag)` with Python lists from
data_generator.sample(), and batch_test calls it with `drop_flag=False`.
Kept: NGCF verbatim (the `eval(args.layer_size)` / `eval(args.regs)` config plumbing, ParameterDicts).
Simplified: the scipy norm_adj is a small `CooMatrix` stand-in with row/col/data/shape/tocoo();
`torch.LongTensor([coo.row, coo.col])` goes through `np.array(...)` first; 5 users, 7 items,
embedding 8, three 8-wide layers.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class NGCF(nn.Module):
    def __init__(self, n_user, n_item, norm_adj, args):
        super(NGCF, self).__init__()
        self.n_user = n_user
        self.n_item = n_item
        self.device = args.device
        self.emb_size = args.embed_size
        self.batch_size = args.batch_size
        self.node_dropout = args.node_dropout[0]
        self.mess_dropout = args.mess_dropout
        self.batch_size = args.batch_size

        self.norm_adj = norm_adj

        self.layers = eval(args.layer_size)
        self.decay = eval(args.regs)[0]

        """
        *********************************************************
        Init the weight of user-item.
        """
        self.embedding_dict, self.weight_dict = self.init_weight()

        """
        *********************************************************
        Get sparse adj.
        """
        self.sparse_norm_adj = self._convert_sp_mat_to_sp_tensor(self.norm_adj).to(self.device)

    def init_weight(self):
        # xavier init
        initializer = nn.init.xavier_uniform_

        embedding_dict = nn.ParameterDict({
            'user_emb': nn.Parameter(initializer(torch.empty(self.n_user,
                                                 self.emb_size))),
            'item_emb': nn.Parameter(initializer(torch.empty(self.n_item,
                                                 self.emb_size)))
        })

        weight_dict = nn.ParameterDict()
        layers = [self.emb_size] + self.layers
        for k in range(len(self.layers)):
            weight_dict.update({'W_gc_%d'%k: nn.Parameter(initializer(torch.empty(layers[k],
                                                                      layers[k+1])))})
            weight_dict.update({'b_gc_%d'%k: nn.Parameter(initializer(torch.empty(1, layers[k+1])))})

            weight_dict.update({'W_bi_%d'%k: nn.Parameter(initializer(torch.empty(layers[k],
                                                                      layers[k+1])))})
            weight_dict.update({'b_bi_%d'%k: nn.Parameter(initializer(torch.empty(1, layers[k+1])))})

        return embedding_dict, weight_dict

    def _convert_sp_mat_to_sp_tensor(self, X):
        coo = X.tocoo()
        i = torch.LongTensor(np.array([coo.row, coo.col]))
        v = torch.from_numpy(coo.data).float()
        return torch.sparse.FloatTensor(i, v, coo.shape)

    def sparse_dropout(self, x, rate, noise_shape):
        random_tensor = 1 - rate
        random_tensor += torch.rand(noise_shape).to(x.device)
        dropout_mask = torch.floor(random_tensor).type(torch.bool)
        i = x._indices()
        v = x._values()

        i = i[:, dropout_mask]
        v = v[dropout_mask]

        out = torch.sparse.FloatTensor(i, v, x.shape).to(x.device)
        return out * (1. / (1 - rate))

    def create_bpr_loss(self, users, pos_items, neg_items):
        pos_scores = torch.sum(torch.mul(users, pos_items), axis=1)
        neg_scores = torch.sum(torch.mul(users, neg_items), axis=1)

        maxi = nn.LogSigmoid()(pos_scores - neg_scores)

        mf_loss = -1 * torch.mean(maxi)

        # cul regularizer
        regularizer = (torch.norm(users) ** 2
                       + torch.norm(pos_items) ** 2
                       + torch.norm(neg_items) ** 2) / 2
        emb_loss = self.decay * regularizer / self.batch_size

        return mf_loss + emb_loss, mf_loss, emb_loss

    def rating(self, u_g_embeddings, pos_i_g_embeddings):
        return torch.matmul(u_g_embeddings, pos_i_g_embeddings.t())

    def forward(self, users, pos_items, neg_items, drop_flag=True):

        A_hat = self.sparse_dropout(self.sparse_norm_adj,
                                    self.node_dropout,
                                    self.sparse_norm_adj._nnz()) if drop_flag else self.sparse_norm_adj

        ego_embeddings = torch.cat([self.embedding_dict['user_emb'],
                                    self.embedding_dict['item_emb']], 0)

        all_embeddings = [ego_embeddings]

        for k in range(len(self.layers)):
            side_embeddings = torch.sparse.mm(A_hat, ego_embeddings)

            # transformed sum messages of neighbors.
            sum_embeddings = torch.matmul(side_embeddings, self.weight_dict['W_gc_%d' % k]) \
                                             + self.weight_dict['b_gc_%d' % k]

            # bi messages of neighbors.
            # element-wise product
            bi_embeddings = torch.mul(ego_embeddings, side_embeddings)
            # transformed bi messages of neighbors.
            bi_embeddings = torch.matmul(bi_embeddings, self.weight_dict['W_bi_%d' % k]) \
                                            + self.weight_dict['b_bi_%d' % k]

            # non-linear activation.
            ego_embeddings = nn.LeakyReLU(negative_slope=0.2)(sum_embeddings + bi_embeddings)

            # message dropout.
            ego_embeddings = nn.Dropout(self.mess_dropout[k])(ego_embeddings)

            # normalize the distribution of embeddings.
            norm_embeddings = F.normalize(ego_embeddings, p=2, dim=1)

            all_embeddings += [norm_embeddings]

        all_embeddings = torch.cat(all_embeddings, 1)
        u_g_embeddings = all_embeddings[:self.n_user, :]
        i_g_embeddings = all_embeddings[self.n_user:, :]

        """
        *********************************************************
        look up.
        """
        u_g_embeddings = u_g_embeddings[users, :]
        pos_i_g_embeddings = i_g_embeddings[pos_items, :]
        neg_i_g_embeddings = i_g_embeddings[neg_items, :]

        return u_g_embeddings, pos_i_g_embeddings, neg_i_g_embeddings


class CooMatrix(object):
    """Stand-in for the scipy.sparse matrix that load_data.get_adj_mat returns."""

    def __init__(self, row, col, data, shape):
        self.row, self.col, self.data, self.shape = row, col, data, shape

    def tocoo(self):
        return self


def toy_norm_adj(n_users, n_items):
    # user u interacted with items u and u+1; symmetric D^-1 A (mean_adj style) normalisation
    rows, cols = [], []
    for u in range(n_users):
        for it in (u % n_items, (u + 1) % n_items):
            rows += [u, n_users + it]
            cols += [n_users + it, u]
    rows, cols = np.array(rows), np.array(cols)
    deg = np.bincount(rows, minlength=n_users + n_items).astype(np.float32)
    data = (1.0 / deg[rows]).astype(np.float32)
    return CooMatrix(rows, cols, data, (n_users + n_items, n_users + n_items))


def parse_args():
    args = argparse.Namespace(embed_size=8, batch_size=4, layer_size='[8,8,8]', regs='[1e-5]',
                              node_dropout='[0.1]', mess_dropout='[0.1,0.1,0.1]',
                              node_dropout_flag=1, device=torch.device('cpu'))
    args.node_dropout = eval(args.node_dropout)
    args.mess_dropout = eval(args.mess_dropout)
    return args


N_USERS, N_ITEMS = 5, 7


def main():
    args = parse_args()
    model = NGCF(N_USERS, N_ITEMS, toy_norm_adj(N_USERS, N_ITEMS), args).to(args.device)
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    args = parse_args()
    model = NGCF(N_USERS, N_ITEMS, toy_norm_adj(N_USERS, N_ITEMS), args).to(args.device)
    users, pos_items, neg_items = [0, 1, 3, 4], [0, 2, 3, 5], [6, 4, 1, 0]
    return model, [
        (users, pos_items, neg_items, True),
        (users, pos_items, neg_items, False),
    ]
