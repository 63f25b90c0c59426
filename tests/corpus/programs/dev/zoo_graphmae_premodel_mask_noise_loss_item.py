"""GraphMAE PreModel: randperm node masking with mask-token / random-noise replacement, re-masking before the decoder, SCE loss, and `loss.item()` in the returned dict.

Source: THUDM/GraphMAE@2b56e0cc3cf657613c4624783eaa07630145ac39:graphmae/models/edcoder.py:1-246
Kept: setup_module's m_type switch, PreModel's constructor plumbing
(_mask_rate, _replace_rate, _mask_token_rate, enc/dec hidden sizes,
enc_mask_token, encoder_to_decoder, setup_loss_fn with partial(sce_loss)),
encoding_mask_noise (randperm, int() counts, token/noise node fancy-index
assignment, `out_x[token_nodes] += self.enc_mask_token`),
mask_attr_prediction (drop-edge switch, return_hidden, re-mask,
the original's `("mlp", "liear")` test) and forward's
`{"loss": loss.item()}`.
Simplified: the PyG GAT is a small edge-list stand-in with the same
call signature (index_add_ mean aggregation, one head, return_hidden);
create_norm returns None; dropout_edge is a stand-in that is not reached
(drop_edge_rate 0).
sce_loss is graphmae/models/loss_func.py's. 8 nodes, 6 features.
"""
from typing import Optional
from itertools import chain
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


def sce_loss(x, y, alpha=3):
    x = F.normalize(x, p=2, dim=-1)
    y = F.normalize(y, p=2, dim=-1)

    loss = (1 - (x * y).sum(dim=-1)).pow_(alpha)

    loss = loss.mean()
    return loss


def create_norm(name):
    return None


def dropout_edge(edge_index, p=0.5):
    """Stand-in for torch_geometric.utils.dropout_edge."""
    edge_mask = torch.rand(edge_index.size(1), device=edge_index.device) >= p
    return edge_index[:, edge_mask], edge_mask


class GAT(nn.Module):
    """Stand-in for graphmae.models.gat.GAT on an edge_index (2, E)."""

    def __init__(self, in_dim, num_hidden, out_dim, num_layers, nhead, nhead_out,
                 activation, feat_drop, attn_drop, negative_slope, residual, norm,
                 concat_out=False, encoding=False):
        super().__init__()
        self.num_layers = num_layers
        dims = [in_dim] + [num_hidden * nhead] * (num_layers - 1) + [out_dim * nhead_out]
        self.gat_layers = nn.ModuleList(
            [nn.Linear(dims[i], dims[i + 1]) for i in range(num_layers)])
        self.activation = nn.PReLU() if activation == "prelu" else nn.ELU()
        self.last_activation = self.activation if encoding else None
        self.feat_drop = nn.Dropout(feat_drop)

    def forward(self, x, edge_index, return_hidden=False):
        h = x
        hidden_list = []
        src, dst = edge_index[0], edge_index[1]
        deg = torch.zeros(x.shape[0], device=x.device).index_add_(
            0, dst, torch.ones_like(dst, dtype=x.dtype)).clamp(min=1)
        for l in range(self.num_layers):
            h = self.gat_layers[l](self.feat_drop(h))
            agg = torch.zeros_like(h).index_add_(0, dst, h[src])
            h = agg / deg.unsqueeze(-1) + h
            if l < self.num_layers - 1 or self.last_activation is not None:
                h = self.activation(h)
            hidden_list.append(h)
        if return_hidden:
            return h, hidden_list
        else:
            return h


def setup_module(m_type, enc_dec, in_dim, num_hidden, out_dim, num_layers, dropout, activation, residual, norm, nhead, nhead_out, attn_drop, negative_slope=0.2, concat_out=True) -> nn.Module:
    if m_type == "gat":
        mod = GAT(
            in_dim=in_dim,
            num_hidden=num_hidden,
            out_dim=out_dim,
            num_layers=num_layers,
            nhead=nhead,
            nhead_out=nhead_out,
            concat_out=concat_out,
            activation=activation,
            feat_drop=dropout,
            attn_drop=attn_drop,
            negative_slope=negative_slope,
            residual=residual,
            norm=create_norm(norm),
            encoding=(enc_dec == "encoding"),
        )
    elif m_type == "mlp":
        # * just for decoder
        mod = nn.Sequential(
            nn.Linear(in_dim, num_hidden),
            nn.PReLU(),
            nn.Dropout(0.2),
            nn.Linear(num_hidden, out_dim)
        )
    elif m_type == "linear":
        mod = nn.Linear(in_dim, out_dim)
    else:
        raise NotImplementedError

    return mod


class PreModel(nn.Module):
    def __init__(
            self,
            in_dim: int,
            num_hidden: int,
            num_layers: int,
            nhead: int,
            nhead_out: int,
            activation: str,
            feat_drop: float,
            attn_drop: float,
            negative_slope: float,
            residual: bool,
            norm: Optional[str],
            mask_rate: float = 0.3,
            encoder_type: str = "gat",
            decoder_type: str = "gat",
            loss_fn: str = "sce",
            drop_edge_rate: float = 0.0,
            replace_rate: float = 0.1,
            alpha_l: float = 2,
            concat_hidden: bool = False,
         ):
        super(PreModel, self).__init__()
        self._mask_rate = mask_rate

        self._encoder_type = encoder_type
        self._decoder_type = decoder_type
        self._drop_edge_rate = drop_edge_rate
        self._output_hidden_size = num_hidden
        self._concat_hidden = concat_hidden

        self._replace_rate = replace_rate
        self._mask_token_rate = 1 - self._replace_rate

        assert num_hidden % nhead == 0
        assert num_hidden % nhead_out == 0
        if encoder_type in ("gat", "dotgat"):
            enc_num_hidden = num_hidden // nhead
            enc_nhead = nhead
        else:
            enc_num_hidden = num_hidden
            enc_nhead = 1

        dec_in_dim = num_hidden
        dec_num_hidden = num_hidden // nhead_out if decoder_type in ("gat", "dotgat") else num_hidden

        # build encoder
        self.encoder = setup_module(
            m_type=encoder_type,
            enc_dec="encoding",
            in_dim=in_dim,
            num_hidden=enc_num_hidden,
            out_dim=enc_num_hidden,
            num_layers=num_layers,
            nhead=enc_nhead,
            nhead_out=enc_nhead,
            concat_out=True,
            activation=activation,
            dropout=feat_drop,
            attn_drop=attn_drop,
            negative_slope=negative_slope,
            residual=residual,
            norm=norm,
        )

        # build decoder for attribute prediction
        self.decoder = setup_module(
            m_type=decoder_type,
            enc_dec="decoding",
            in_dim=dec_in_dim,
            num_hidden=dec_num_hidden,
            out_dim=in_dim,
            num_layers=1,
            nhead=nhead,
            nhead_out=nhead_out,
            activation=activation,
            dropout=feat_drop,
            attn_drop=attn_drop,
            negative_slope=negative_slope,
            residual=residual,
            norm=norm,
            concat_out=True,
        )

        self.enc_mask_token = nn.Parameter(torch.zeros(1, in_dim))
        if concat_hidden:
            self.encoder_to_decoder = nn.Linear(dec_in_dim * num_layers, dec_in_dim, bias=False)
        else:
            self.encoder_to_decoder = nn.Linear(dec_in_dim, dec_in_dim, bias=False)

        # * setup loss function
        self.criterion = self.setup_loss_fn(loss_fn, alpha_l)

    @property
    def output_hidden_dim(self):
        return self._output_hidden_size

    def setup_loss_fn(self, loss_fn, alpha_l):
        if loss_fn == "mse":
            criterion = nn.MSELoss()
        elif loss_fn == "sce":
            criterion = partial(sce_loss, alpha=alpha_l)
        else:
            raise NotImplementedError
        return criterion

    def encoding_mask_noise(self, x, mask_rate=0.3):
        num_nodes = x.shape[0]
        perm = torch.randperm(num_nodes, device=x.device)
        num_mask_nodes = int(mask_rate * num_nodes)

        # random masking
        num_mask_nodes = int(mask_rate * num_nodes)
        mask_nodes = perm[: num_mask_nodes]
        keep_nodes = perm[num_mask_nodes: ]

        if self._replace_rate > 0:
            num_noise_nodes = int(self._replace_rate * num_mask_nodes)
            perm_mask = torch.randperm(num_mask_nodes, device=x.device)
            token_nodes = mask_nodes[perm_mask[: int(self._mask_token_rate * num_mask_nodes)]]
            noise_nodes = mask_nodes[perm_mask[-int(self._replace_rate * num_mask_nodes):]]
            noise_to_be_chosen = torch.randperm(num_nodes, device=x.device)[:num_noise_nodes]

            out_x = x.clone()
            out_x[token_nodes] = 0.0
            out_x[noise_nodes] = x[noise_to_be_chosen]
        else:
            out_x = x.clone()
            token_nodes = mask_nodes
            out_x[mask_nodes] = 0.0

        out_x[token_nodes] += self.enc_mask_token

        return out_x, (mask_nodes, keep_nodes)

    def forward(self, x, edge_index):
        # ---- attribute reconstruction ----
        loss = self.mask_attr_prediction(x, edge_index)
        loss_item = {"loss": loss.item()}
        return loss, loss_item

    def mask_attr_prediction(self, x, edge_index):
        use_x, (mask_nodes, keep_nodes) = self.encoding_mask_noise(x, self._mask_rate)

        if self._drop_edge_rate > 0:
            use_edge_index, masked_edges = dropout_edge(edge_index, self._drop_edge_rate)
        else:
            use_edge_index = edge_index

        enc_rep, all_hidden = self.encoder(use_x, use_edge_index, return_hidden=True)
        if self._concat_hidden:
            enc_rep = torch.cat(all_hidden, dim=1)

        # ---- attribute reconstruction ----
        rep = self.encoder_to_decoder(enc_rep)

        if self._decoder_type not in ("mlp", "linear"):
            # * remask, re-mask
            rep[mask_nodes] = 0

        if self._decoder_type in ("mlp", "liear") :
            recon = self.decoder(rep)
        else:
            recon = self.decoder(rep, use_edge_index)

        x_init = x[mask_nodes]
        x_rec = recon[mask_nodes]

        loss = self.criterion(x_rec, x_init)
        return loss

    def embed(self, x, edge_index):
        rep = self.encoder(x, edge_index)
        return rep

    @property
    def enc_params(self):
        return self.encoder.parameters()

    @property
    def dec_params(self):
        return chain(*[self.encoder_to_decoder.parameters(), self.decoder.parameters()])


def build_model():
    return PreModel(
        in_dim=6, num_hidden=8, num_layers=2, nhead=2, nhead_out=1,
        activation="prelu", feat_drop=0.1, attn_drop=0.1, negative_slope=0.2,
        residual=False, norm=None, mask_rate=0.5, encoder_type="gat",
        decoder_type="gat", loss_fn="sce", drop_edge_rate=0.0,
        replace_rate=0.25, alpha_l=2, concat_hidden=False,
    )


def pretrain():
    model = build_model()
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    x = torch.randn(8, 6)
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7, 1, 3],
                               [1, 2, 3, 4, 5, 6, 7, 0, 5, 7]])
    return build_model(), [(x, edge_index)]
