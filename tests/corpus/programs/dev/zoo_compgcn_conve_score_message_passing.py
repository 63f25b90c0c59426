"""CompGCN with the ConvE scorer (one CompGCNConv layer, 'mult' composition): the same hand-written
MessagePassing.propagate, then a 2D "image" of [sub; rel] through BatchNorm2d/Conv2d, `x.view(-1, self.flat_sz)`,
scores against all entities; evaluated in eval mode.

Source: malllabiisc/CompGCN@057cb6821151df95f3e60f0e30ea33021c2533fa:model/models.py:5-52,86-128 (BaseModel,
CompGCNBase.forward_base, CompGCN_ConvE), malllabiisc/CompGCN@c5cd749a530f4a24b6be49ec31b201e5a2fc80d0:
model/compgcn_conv.py:4-82, malllabiisc/CompGCN@8776da77018cb5414fe9623c55c3cd6f0e2387d3:model/message_passing.py:4-77,
malllabiisc/CompGCN@d9e02af41b6a352baadc94a7dc9382b4434d70e8:helper.py:78-81 (get_param)
Kept: CompGCN_ConvE.concat/forward verbatim, CompGCNConv.forward/message/compute_norm and propagate verbatim (tabs
-> spaces), the `self.p` params plumbing and `if self.p.gcn_layer == 2` conditional expressions.
Simplified: torch_scatter's scatter/scatter_add are replaced by torch-only equivalents (scatter_reduce_ /
scatter_add_) with the same signature; inspect.getargspec (removed in Python 3.11) -> getfullargspec; the 'corr'
composition (old torch.rfft API) is left out; embed_dim 8 as a 2x4 image (k_w=2, k_h=4), 2 filters, kernel 2.
"""
import inspect

import torch
from torch.nn import Parameter
from torch.nn import functional as F
from torch.nn.init import xavier_normal_


def scatter(src, index, dim=0, out=None, dim_size=None, reduce='sum'):
    # torch-only stand-in for torch_scatter.scatter (dim=0, 2-D src)
    size = list(src.shape)
    size[dim] = dim_size if dim_size is not None else int(index.max()) + 1
    index = index.view(-1, 1).expand_as(src)
    out = torch.zeros(size, dtype=src.dtype, device=src.device)
    reduce = {'sum': 'sum', 'mean': 'mean', 'max': 'amax'}[reduce]
    return out.scatter_reduce_(dim, index, src, reduce=reduce, include_self=False)


def scatter_add(src, index, dim=0, dim_size=None):
    # torch-only stand-in for torch_scatter.scatter_add (1-D src)
    out = torch.zeros(dim_size, dtype=src.dtype, device=src.device)
    return out.scatter_add_(dim, index, src)


def get_param(shape):
    param = Parameter(torch.Tensor(*shape))
    xavier_normal_(param.data)
    return param


def scatter_(name, src, index, dim_size=None):
    if name == 'add': name = 'sum'
    assert name in ['sum', 'mean', 'max']
    out = scatter(src, index, dim=0, out=None, dim_size=dim_size, reduce=name)
    return out[0] if isinstance(out, tuple) else out


class MessagePassing(torch.nn.Module):
    def __init__(self, aggr='add'):
        super(MessagePassing, self).__init__()

        self.message_args = inspect.getfullargspec(self.message)[0][1:]  # In the defined message function: get the list of arguments as list of string
        self.update_args = inspect.getfullargspec(self.update)[0][2:]  # Same for update function starting from 3rd argument | first=self, second=out

    def propagate(self, aggr, edge_index, **kwargs):
        assert aggr in ['add', 'mean', 'max']
        kwargs['edge_index'] = edge_index

        size = None
        message_args = []
        for arg in self.message_args:
            if arg[-2:] == '_i':  # If arguments ends with _i then include indic
                tmp = kwargs[arg[:-2]]  # Take the front part of the variable | Mostly it will be 'x',
                size = tmp.size(0)
                message_args.append(tmp[edge_index[0]])  # Lookup for head entities in edges
            elif arg[-2:] == '_j':
                tmp = kwargs[arg[:-2]]  # tmp = kwargs['x']
                size = tmp.size(0)
                message_args.append(tmp[edge_index[1]])  # Lookup for tail entities in edges
            else:
                message_args.append(kwargs[arg])  # Take things from kwargs

        update_args = [kwargs[arg] for arg in self.update_args]  # Take update args from kwargs

        out = self.message(*message_args)
        out = scatter_(aggr, out, edge_index[0], dim_size=size)  # Aggregated neighbors for each vertex
        out = self.update(out, *update_args)

        return out

    def message(self, x_j):  # pragma: no cover
        return x_j

    def update(self, aggr_out):  # pragma: no cover
        return aggr_out


class CompGCNConv(MessagePassing):
    def __init__(self, in_channels, out_channels, num_rels, act=lambda x: x, params=None):
        super(self.__class__, self).__init__()

        self.p = params
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_rels = num_rels
        self.act = act
        self.device = None

        self.w_loop = get_param((in_channels, out_channels))
        self.w_in = get_param((in_channels, out_channels))
        self.w_out = get_param((in_channels, out_channels))
        self.w_rel = get_param((in_channels, out_channels))
        self.loop_rel = get_param((1, in_channels))

        self.drop = torch.nn.Dropout(self.p.dropout)
        self.bn = torch.nn.BatchNorm1d(out_channels)

        if self.p.bias: self.register_parameter('bias', Parameter(torch.zeros(out_channels)))

    def forward(self, x, edge_index, edge_type, rel_embed):
        if self.device is None:
            self.device = edge_index.device

        rel_embed = torch.cat([rel_embed, self.loop_rel], dim=0)
        num_edges = edge_index.size(1) // 2
        num_ent = x.size(0)

        self.in_index, self.out_index = edge_index[:, :num_edges], edge_index[:, num_edges:]
        self.in_type, self.out_type = edge_type[:num_edges], edge_type[num_edges:]

        self.loop_index = torch.stack([torch.arange(num_ent), torch.arange(num_ent)]).to(self.device)
        self.loop_type = torch.full((num_ent,), rel_embed.size(0) - 1, dtype=torch.long).to(self.device)

        self.in_norm = self.compute_norm(self.in_index, num_ent)
        self.out_norm = self.compute_norm(self.out_index, num_ent)

        in_res = self.propagate('add', self.in_index, x=x, edge_type=self.in_type, rel_embed=rel_embed, edge_norm=self.in_norm, mode='in')
        loop_res = self.propagate('add', self.loop_index, x=x, edge_type=self.loop_type, rel_embed=rel_embed, edge_norm=None, mode='loop')
        out_res = self.propagate('add', self.out_index, x=x, edge_type=self.out_type, rel_embed=rel_embed, edge_norm=self.out_norm, mode='out')
        out = self.drop(in_res) * (1 / 3) + self.drop(out_res) * (1 / 3) + loop_res * (1 / 3)

        if self.p.bias: out = out + self.bias
        out = self.bn(out)

        return self.act(out), torch.matmul(rel_embed, self.w_rel)[:-1]  # Ignoring the self loop inserted

    def rel_transform(self, ent_embed, rel_embed):
        if self.p.opn == 'sub': trans_embed = ent_embed - rel_embed
        elif self.p.opn == 'mult': trans_embed = ent_embed * rel_embed
        else: raise NotImplementedError

        return trans_embed

    def message(self, x_j, edge_type, rel_embed, edge_norm, mode):
        weight = getattr(self, 'w_{}'.format(mode))
        rel_emb = torch.index_select(rel_embed, 0, edge_type)
        xj_rel = self.rel_transform(x_j, rel_emb)
        out = torch.mm(xj_rel, weight)

        return out if edge_norm is None else out * edge_norm.view(-1, 1)

    def update(self, aggr_out):
        return aggr_out

    def compute_norm(self, edge_index, num_ent):
        row, col = edge_index
        edge_weight = torch.ones_like(row).float()
        deg = scatter_add(edge_weight, row, dim=0, dim_size=num_ent)  # Summing number of weights of the edges
        deg_inv = deg.pow(-0.5)  # D^{-0.5}
        deg_inv[deg_inv == float('inf')] = 0
        norm = deg_inv[row] * edge_weight * deg_inv[col]  # D^{-0.5}

        return norm


class BaseModel(torch.nn.Module):
    def __init__(self, params):
        super(BaseModel, self).__init__()

        self.p = params
        self.act = torch.tanh
        self.bceloss = torch.nn.BCELoss()

    def loss(self, pred, true_label):
        return self.bceloss(pred, true_label)


class CompGCNBase(BaseModel):
    def __init__(self, edge_index, edge_type, num_rel, params=None):
        super(CompGCNBase, self).__init__(params)

        self.edge_index = edge_index
        self.edge_type = edge_type
        self.p.gcn_dim = self.p.embed_dim if self.p.gcn_layer == 1 else self.p.gcn_dim
        self.init_embed = get_param((self.p.num_ent, self.p.init_dim))
        self.device = self.edge_index.device

        if self.p.score_func == 'transe': self.init_rel = get_param((num_rel, self.p.init_dim))
        else: self.init_rel = get_param((num_rel * 2, self.p.init_dim))

        self.conv1 = CompGCNConv(self.p.init_dim, self.p.gcn_dim, num_rel, act=self.act, params=self.p)
        self.conv2 = CompGCNConv(self.p.gcn_dim, self.p.embed_dim, num_rel, act=self.act, params=self.p) if self.p.gcn_layer == 2 else None

        self.register_parameter('bias', Parameter(torch.zeros(self.p.num_ent)))

    def forward_base(self, sub, rel, drop1, drop2):

        r = self.init_rel if self.p.score_func != 'transe' else torch.cat([self.init_rel, -self.init_rel], dim=0)
        x, r = self.conv1(self.init_embed, self.edge_index, self.edge_type, rel_embed=r)
        x = drop1(x)
        x, r = self.conv2(x, self.edge_index, self.edge_type, rel_embed=r) if self.p.gcn_layer == 2 else (x, r)
        x = drop2(x) if self.p.gcn_layer == 2 else x

        sub_emb = torch.index_select(x, 0, sub)
        rel_emb = torch.index_select(r, 0, rel)

        return sub_emb, rel_emb, x


class CompGCN_ConvE(CompGCNBase):
    def __init__(self, edge_index, edge_type, params=None):
        super(self.__class__, self).__init__(edge_index, edge_type, params.num_rel, params)

        self.bn0 = torch.nn.BatchNorm2d(1)
        self.bn1 = torch.nn.BatchNorm2d(self.p.num_filt)
        self.bn2 = torch.nn.BatchNorm1d(self.p.embed_dim)

        self.hidden_drop = torch.nn.Dropout(self.p.hid_drop)
        self.hidden_drop2 = torch.nn.Dropout(self.p.hid_drop2)
        self.feature_drop = torch.nn.Dropout(self.p.feat_drop)
        self.m_conv1 = torch.nn.Conv2d(1, out_channels=self.p.num_filt, kernel_size=(self.p.ker_sz, self.p.ker_sz), stride=1, padding=0, bias=self.p.bias)

        flat_sz_h = int(2 * self.p.k_w) - self.p.ker_sz + 1
        flat_sz_w = self.p.k_h - self.p.ker_sz + 1
        self.flat_sz = flat_sz_h * flat_sz_w * self.p.num_filt
        self.fc = torch.nn.Linear(self.flat_sz, self.p.embed_dim)

    def concat(self, e1_embed, rel_embed):
        e1_embed = e1_embed.view(-1, 1, self.p.embed_dim)
        rel_embed = rel_embed.view(-1, 1, self.p.embed_dim)
        stack_inp = torch.cat([e1_embed, rel_embed], 1)
        stack_inp = torch.transpose(stack_inp, 2, 1).reshape((-1, 1, 2 * self.p.k_w, self.p.k_h))
        return stack_inp

    def forward(self, sub, rel):

        sub_emb, rel_emb, all_ent = self.forward_base(sub, rel, self.hidden_drop, self.feature_drop)
        stk_inp = self.concat(sub_emb, rel_emb)
        x = self.bn0(stk_inp)
        x = self.m_conv1(x)
        x = self.bn1(x)
        x = F.relu(x)
        x = self.feature_drop(x)
        x = x.view(-1, self.flat_sz)
        x = self.fc(x)
        x = self.hidden_drop2(x)
        x = self.bn2(x)
        x = F.relu(x)

        x = torch.mm(x, all_ent.transpose(1, 0))
        x += self.bias.expand_as(x)

        score = torch.sigmoid(x)
        return score


class Params:
    num_ent = 6
    num_rel = 2
    init_dim = 8
    gcn_dim = 8
    embed_dim = 8
    gcn_layer = 1
    dropout = 0.1
    hid_drop = 0.3
    hid_drop2 = 0.3
    feat_drop = 0.3
    num_filt = 2
    ker_sz = 2
    k_w = 2
    k_h = 4
    bias = True
    opn = 'mult'
    score_func = 'conve'


def build_graph():
    # (head, relation, tail) triples; inverse edges appended as the second half, relation id + num_rel
    triples = [(0, 0, 1), (1, 1, 2), (2, 0, 3), (3, 1, 4), (4, 0, 0)]
    src = [h for h, _, _ in triples] + [t for _, _, t in triples]
    dst = [t for _, _, t in triples] + [h for h, _, _ in triples]
    rel = [r for _, r, _ in triples] + [r + Params.num_rel for _, r, _ in triples]
    return torch.tensor([src, dst]), torch.tensor(rel)


def build_model():
    edge_index, edge_type = build_graph()
    return CompGCN_ConvE(edge_index, edge_type, params=Params())


def evaluate(model, sub, rel):
    model = torch.compile(model.eval())
    with torch.no_grad():
        return model(sub, rel)


def make():
    torch.manual_seed(0)
    sub = torch.tensor([0, 2, 5])
    rel = torch.tensor([0, 3, 1])
    return build_model().eval(), [(sub, rel)]
