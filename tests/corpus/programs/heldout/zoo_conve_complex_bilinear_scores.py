"""ComplEx knowledge-graph scorer: four embedding tables, dropout applied twice, `.view(Config.batch_size, -1)` and the complex bilinear product against all entities.

Source: TimDettmers/ConvE@2a2e096aa9b14672aef7ec9c7c21522248e7f7e7:model.py:15-52
Kept: the global spodernet-style `Config` read inside forward, the doubled
`inp_drop` calls, the four `torch.mm` terms and `F.sigmoid`, the BCELoss attribute,
`init()`.
Simplified: spodernet Config replaced by a plain class; 20 entities, 6 relations,
embedding size 8, batch size 4.
"""
import torch
from torch.nn import functional as F
from torch.nn.init import xavier_normal_


class Config:
    batch_size = 4
    embedding_dim = 8
    input_dropout = 0.2


class Complex(torch.nn.Module):
    def __init__(self, num_entities, num_relations):
        super(Complex, self).__init__()
        self.num_entities = num_entities
        self.emb_e_real = torch.nn.Embedding(num_entities, Config.embedding_dim, padding_idx=0)
        self.emb_e_img = torch.nn.Embedding(num_entities, Config.embedding_dim, padding_idx=0)
        self.emb_rel_real = torch.nn.Embedding(num_relations, Config.embedding_dim, padding_idx=0)
        self.emb_rel_img = torch.nn.Embedding(num_relations, Config.embedding_dim, padding_idx=0)
        self.inp_drop = torch.nn.Dropout(Config.input_dropout)
        self.loss = torch.nn.BCELoss()

    def init(self):
        xavier_normal_(self.emb_e_real.weight.data)
        xavier_normal_(self.emb_e_img.weight.data)
        xavier_normal_(self.emb_rel_real.weight.data)
        xavier_normal_(self.emb_rel_img.weight.data)

    def forward(self, e1, rel):

        e1_embedded_real = self.inp_drop(self.emb_e_real(e1)).view(Config.batch_size, -1)
        rel_embedded_real = self.inp_drop(self.emb_rel_real(rel)).view(Config.batch_size, -1)
        e1_embedded_img = self.inp_drop(self.emb_e_img(e1)).view(Config.batch_size, -1)
        rel_embedded_img = self.inp_drop(self.emb_rel_img(rel)).view(Config.batch_size, -1)

        e1_embedded_real = self.inp_drop(e1_embedded_real)
        rel_embedded_real = self.inp_drop(rel_embedded_real)
        e1_embedded_img = self.inp_drop(e1_embedded_img)
        rel_embedded_img = self.inp_drop(rel_embedded_img)

        # complex space bilinear product (equivalent to HolE)
        realrealreal = torch.mm(e1_embedded_real*rel_embedded_real, self.emb_e_real.weight.transpose(1,0))
        realimgimg = torch.mm(e1_embedded_real*rel_embedded_img, self.emb_e_img.weight.transpose(1,0))
        imgrealimg = torch.mm(e1_embedded_img*rel_embedded_real, self.emb_e_img.weight.transpose(1,0))
        imgimgreal = torch.mm(e1_embedded_img*rel_embedded_img, self.emb_e_real.weight.transpose(1,0))
        pred = realrealreal + realimgimg + imgrealimg - imgimgreal
        pred = F.sigmoid(pred)

        return pred


def build(num_entities, num_relations):
    model = Complex(num_entities, num_relations)
    model.init()
    return torch.compile(model.eval())


def make():
    torch.manual_seed(0)
    model = Complex(20, 6)
    model.init()
    e1 = torch.tensor([[1], [5], [7], [19]])
    rel = torch.tensor([[1], [2], [3], [5]])
    return model.eval(), [(e1, rel)]
