"""LightGCN BPR training step: `BPRLoss.stageOne` (bpr_loss, weight decay, zero_grad/backward/step, `loss.cpu().item()`) with the graph-dropout flag on, so each step re-samples the sparse adjacency in `__dropout_x` (`x.indices()`, `x.values()`, a random boolean keep mask and the legacy `torch.sparse.FloatTensor` constructor).

Source: gusye1234/LightGCN-PyTorch@947ca2b3b1d2d3545b114145710cb06c4e57b3d2:code/utils.py:32-50
Also: code/model.py:17-22,83-215 (BasicModel, LightGCN), code/Procedure.py:25-50
(BPR_train_original calls `bpr.stageOne(batch_users, batch_pos, batch_neg)`
with the model in train()).
Also: code/dataloader.py:140-161 (LastFM.getSparseGraph, the normalised
|0 R; R^T 0| adjacency as a coalesced sparse COO tensor), code/world.py
(config keys, cprint), code/parse.py defaults (layer 3, keepprob 0.6).
Kept: BasicModel and LightGCN verbatim (name-mangled `__dropout_x` /
`__dropout`, the A_split branches, the `print("droping")` in training),
getSparseGraph verbatim.
Simplified: `world` is a small class; the dataset is a stand-in holding
trainUser/trainItem arrays (no pandas/csr loading); 5 users, 6 items,
latent_dim 8.
Config: dropout 1 (`--dropout 1`), lr 0.001, decay 1e-4.
"""
import numpy as np
import torch
from torch import nn, optim


class world:
    device = torch.device('cpu')
    config = {}

    @staticmethod
    def cprint(words : str):
        print(f"\033[0;30;43m{words}\033[0m")


class BasicDataset(object):
    def __init__(self):
        print("init dataset")

    @property
    def n_users(self):
        raise NotImplementedError

    @property
    def m_items(self):
        raise NotImplementedError

    def getSparseGraph(self):
        raise NotImplementedError


class InteractionDataset(BasicDataset):
    def __init__(self, trainUser, trainItem, n_users, m_items):
        self.trainUser = trainUser
        self.trainItem = trainItem
        self._n_users = n_users
        self._m_items = m_items
        self.Graph = None

    @property
    def n_users(self):
        return self._n_users

    @property
    def m_items(self):
        return self._m_items

    def getSparseGraph(self):
        if self.Graph is None:
            user_dim = torch.LongTensor(self.trainUser)
            item_dim = torch.LongTensor(self.trainItem)
            
            first_sub = torch.stack([user_dim, item_dim + self.n_users])
            second_sub = torch.stack([item_dim+self.n_users, user_dim])
            index = torch.cat([first_sub, second_sub], dim=1)
            data = torch.ones(index.size(-1)).int()
            self.Graph = torch.sparse.IntTensor(index, data, torch.Size([self.n_users+self.m_items, self.n_users+self.m_items]))
            dense = self.Graph.to_dense()
            D = torch.sum(dense, dim=1).float()
            D[D==0.] = 1.
            D_sqrt = torch.sqrt(D).unsqueeze(dim=0)
            dense = dense/D_sqrt
            dense = dense/D_sqrt.t()
            index = dense.nonzero()
            data  = dense[dense >= 1e-9]
            assert len(index) == len(data)
            self.Graph = torch.sparse.FloatTensor(index.t(), data, torch.Size([self.n_users+self.m_items, self.n_users+self.m_items]))
            self.Graph = self.Graph.coalesce().to(world.device)
        return self.Graph


class BasicModel(nn.Module):    
    def __init__(self):
        super(BasicModel, self).__init__()
    
    def getUsersRating(self, users):
        raise NotImplementedError


class LightGCN(BasicModel):
    def __init__(self, 
                 config:dict, 
                 dataset:BasicDataset):
        super(LightGCN, self).__init__()
        self.config = config
        self.dataset : BasicDataset = dataset
        self.__init_weight()

    def __init_weight(self):
        self.num_users  = self.dataset.n_users
        self.num_items  = self.dataset.m_items
        self.latent_dim = self.config['latent_dim_rec']
        self.n_layers = self.config['lightGCN_n_layers']
        self.keep_prob = self.config['keep_prob']
        self.A_split = self.config['A_split']
        self.embedding_user = torch.nn.Embedding(
            num_embeddings=self.num_users, embedding_dim=self.latent_dim)
        self.embedding_item = torch.nn.Embedding(
            num_embeddings=self.num_items, embedding_dim=self.latent_dim)
        if self.config['pretrain'] == 0:
# random normal init seems to be a better choice when lightGCN actually don't use any non-linear activation function
            nn.init.normal_(self.embedding_user.weight, std=0.1)
            nn.init.normal_(self.embedding_item.weight, std=0.1)
            world.cprint('use NORMAL distribution initilizer')
        else:
            self.embedding_user.weight.data.copy_(torch.from_numpy(self.config['user_emb']))
            self.embedding_item.weight.data.copy_(torch.from_numpy(self.config['item_emb']))
            print('use pretarined data')
        self.f = nn.Sigmoid()
        self.Graph = self.dataset.getSparseGraph()
        print(f"lgn is already to go(dropout:{self.config['dropout']})")

        # print("save_txt")
    def __dropout_x(self, x, keep_prob):
        size = x.size()
        index = x.indices().t()
        values = x.values()
        random_index = torch.rand(len(values)) + keep_prob
        random_index = random_index.int().bool()
        index = index[random_index]
        values = values[random_index]/keep_prob
        g = torch.sparse.FloatTensor(index.t(), values, size)
        return g
    
    def __dropout(self, keep_prob):
        if self.A_split:
            graph = []
            for g in self.Graph:
                graph.append(self.__dropout_x(g, keep_prob))
        else:
            graph = self.__dropout_x(self.Graph, keep_prob)
        return graph
    
    def computer(self):
        """
        propagate methods for lightGCN
        """       
        users_emb = self.embedding_user.weight
        items_emb = self.embedding_item.weight
        all_emb = torch.cat([users_emb, items_emb])
        #   torch.split(all_emb , [self.num_users, self.num_items])
        embs = [all_emb]
        if self.config['dropout']:
            if self.training:
                print("droping")
                g_droped = self.__dropout(self.keep_prob)
            else:
                g_droped = self.Graph        
        else:
            g_droped = self.Graph    
        
        for layer in range(self.n_layers):
            if self.A_split:
                temp_emb = []
                for f in range(len(g_droped)):
                    temp_emb.append(torch.sparse.mm(g_droped[f], all_emb))
                side_emb = torch.cat(temp_emb, dim=0)
                all_emb = side_emb
            else:
                all_emb = torch.sparse.mm(g_droped, all_emb)
            embs.append(all_emb)
        embs = torch.stack(embs, dim=1)
        #print(embs.size())
        light_out = torch.mean(embs, dim=1)
        users, items = torch.split(light_out, [self.num_users, self.num_items])
        return users, items
    
    def getUsersRating(self, users):
        all_users, all_items = self.computer()
        users_emb = all_users[users.long()]
        items_emb = all_items
        rating = self.f(torch.matmul(users_emb, items_emb.t()))
        return rating
    
    def getEmbedding(self, users, pos_items, neg_items):
        all_users, all_items = self.computer()
        users_emb = all_users[users]
        pos_emb = all_items[pos_items]
        neg_emb = all_items[neg_items]
        users_emb_ego = self.embedding_user(users)
        pos_emb_ego = self.embedding_item(pos_items)
        neg_emb_ego = self.embedding_item(neg_items)
        return users_emb, pos_emb, neg_emb, users_emb_ego, pos_emb_ego, neg_emb_ego
    
    def bpr_loss(self, users, pos, neg):
        (users_emb, pos_emb, neg_emb, 
        userEmb0,  posEmb0, negEmb0) = self.getEmbedding(users.long(), pos.long(), neg.long())
        reg_loss = (1/2)*(userEmb0.norm(2).pow(2) + 
                         posEmb0.norm(2).pow(2)  +
                         negEmb0.norm(2).pow(2))/float(len(users))
        pos_scores = torch.mul(users_emb, pos_emb)
        pos_scores = torch.sum(pos_scores, dim=1)
        neg_scores = torch.mul(users_emb, neg_emb)
        neg_scores = torch.sum(neg_scores, dim=1)
        
        loss = torch.mean(torch.nn.functional.softplus(neg_scores - pos_scores))
        
        return loss, reg_loss
       
    def forward(self, users, items):
        # compute embedding
        all_users, all_items = self.computer()
        # print('forward')
        #all_users, all_items = self.computer()
        users_emb = all_users[users]
        items_emb = all_items[items]
        inner_pro = torch.mul(users_emb, items_emb)
        gamma     = torch.sum(inner_pro, dim=1)
        return gamma


class BPRLoss:
    def __init__(self,
                 recmodel : BasicModel,
                 config : dict):
        self.model = recmodel
        self.weight_decay = config['decay']
        self.lr = config['lr']
        self.opt = optim.Adam(recmodel.parameters(), lr=self.lr)

    def stageOne(self, users, pos, neg):
        loss, reg_loss = self.model.bpr_loss(users, pos, neg)
        reg_loss = reg_loss*self.weight_decay
        loss = loss + reg_loss

        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

        return loss.cpu().item()


CONFIG = {'latent_dim_rec': 8, 'lightGCN_n_layers': 3, 'keep_prob': 0.6, 'A_split': False,
          'pretrain': 0, 'dropout': 1, 'lr': 0.001, 'decay': 1e-4}
TRAIN_USER = np.array([0, 0, 1, 2, 2, 3, 4, 4])
TRAIN_ITEM = np.array([1, 3, 0, 2, 5, 4, 1, 5])


def make():
    torch.manual_seed(0)
    dataset = InteractionDataset(TRAIN_USER, TRAIN_ITEM, n_users=5, m_items=6)
    Recmodel = LightGCN(CONFIG, dataset)
    Recmodel.train()
    bpr = BPRLoss(Recmodel, CONFIG)
    users = torch.tensor([0, 1, 2, 4])
    pos = torch.tensor([1, 0, 5, 5])
    neg = torch.tensor([2, 4, 0, 3])
    return bpr.stageOne, [(users, pos, neg)]


def train(config, dataset):
    Recmodel = LightGCN(config, dataset)
    Recmodel.train()
    bpr = BPRLoss(Recmodel, config)
    bpr.stageOne = torch.compile(bpr.stageOne)
    return bpr
