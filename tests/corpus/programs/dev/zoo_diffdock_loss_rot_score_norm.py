"""DiffDock training loss: `so3.score_norm(rot_sigma.cpu())` converts sigmas with `eps.numpy()` and indexes a precomputed numpy table, `torus.score_norm(edge_tor_sigma.cpu().numpy())` does the same for torsions, and the per-graph torsion loss scatters with `data['ligand'].batch[edge_index[0][data['ligand'].edge_mask]]`.

Source: gcorso/DiffDock@b4704d94de74d8cb2acbe7ec84ad234c09e78009:utils/training.py:15-124
Also: utils/so3.py and utils/torus.py (table precomputation, score_norm),
utils/diffusion_utils.py (t_to_sigma), train.py (the partial(t_to_sigma, args=args)
and loss call of train_epoch).
Kept: loss_function verbatim (cuda/cpu data plumbing, apply_mean and per-graph
index_add_ paths, backbone/sidechain branches), so3.score_norm, torus.score/score_norm
and t_to_sigma verbatim.
Simplified: the .npy caches are not read or written; the SO(3) and torus tables are
computed at import with 60 sigma bins, 40 series terms and a seeded RandomState of
200 samples instead of 2000/5000 bins and 10000 unseeded samples; the
torch_geometric HeteroData batch is a small attribute/key object (tor_sigma_edge
stays a per-graph list of numpy arrays, as PyG collates it); 2 complexes with
5 rotatable edges.
"""
import functools

import numpy as np
import torch

# ---- utils/so3.py ----
MIN_EPS, MAX_EPS, N_EPS = 0.0005, 4, 60
X_N = 60


def _expansion(omega, eps, L=40):  # the summation term only
    p = 0
    for l in range(L):
        p += (2 * l + 1) * np.exp(-l * (l + 1) * eps**2 / 2) * np.sin(omega * (l + 1 / 2)) / np.sin(omega / 2)
    return p


def _density(expansion, omega, marginal=True):  # if marginal, density over [0, pi], else over SO(3)
    if marginal:
        return expansion * (1 - np.cos(omega)) / np.pi
    else:
        return expansion / 8 / np.pi ** 2  # the constant factor doesn't affect any actual calculations though


def _score(exp, omega, eps, L=40):  # score of density over SO(3)
    dSigma = 0
    for l in range(L):
        hi = np.sin(omega * (l + 1 / 2))
        dhi = (l + 1 / 2) * np.cos(omega * (l + 1 / 2))
        lo = np.sin(omega / 2)
        dlo = 1 / 2 * np.cos(omega / 2)
        dSigma += (2 * l + 1) * np.exp(-l * (l + 1) * eps**2 / 2) * (lo * dhi - hi * dlo) / lo ** 2
    return dSigma / exp


_eps_array = 10 ** np.linspace(np.log10(MIN_EPS), np.log10(MAX_EPS), N_EPS)
_omegas_array = np.linspace(0, np.pi, X_N + 1)[1:]

_exp_vals = np.asarray([_expansion(_omegas_array, eps) for eps in _eps_array])
_pdf_vals = np.asarray([_density(_exp, _omegas_array, marginal=True) for _exp in _exp_vals])
_cdf_vals = np.asarray([_pdf.cumsum() / X_N * np.pi for _pdf in _pdf_vals])
_score_norms = np.asarray([_score(_exp_vals[i], _omegas_array, _eps_array[i]) for i in range(len(_eps_array))])

_exp_score_norms = np.sqrt(np.sum(_score_norms**2 * _pdf_vals, axis=1) / np.sum(_pdf_vals, axis=1) / np.pi)


class so3:
    @staticmethod
    def score_norm(eps):
        eps = eps.numpy()
        eps_idx = (np.log10(eps) - np.log10(MIN_EPS)) / (np.log10(MAX_EPS) - np.log10(MIN_EPS)) * N_EPS
        eps_idx = np.clip(np.around(eps_idx).astype(int), a_min=0, a_max=N_EPS-1)
        return torch.from_numpy(_exp_score_norms[eps_idx]).float()


# ---- utils/torus.py ----
def _torus_p(x, sigma, N=10):
    p_ = 0
    for i in range(-N, N + 1):
        p_ += np.exp(-(x + 2 * np.pi * i) ** 2 / 2 / sigma ** 2)
    return p_


def _torus_grad(x, sigma, N=10):
    p_ = 0
    for i in range(-N, N + 1):
        p_ += (x + 2 * np.pi * i) / sigma ** 2 * np.exp(-(x + 2 * np.pi * i) ** 2 / 2 / sigma ** 2)
    return p_


X_MIN, T_X_N = 1e-5, 60  # relative to pi
SIGMA_MIN, SIGMA_MAX, SIGMA_N = 3e-3, 2, 60  # relative to pi

_x = 10 ** np.linspace(np.log10(X_MIN), 0, T_X_N + 1) * np.pi
_sigma = 10 ** np.linspace(np.log10(SIGMA_MIN), np.log10(SIGMA_MAX), SIGMA_N + 1) * np.pi

p_ = _torus_p(_x, _sigma[:, None], N=10)
_p_eps = np.finfo(p_.dtype).eps
score_ = _torus_grad(_x, _sigma[:, None], N=10) / (p_ + _p_eps)


class torus:
    @staticmethod
    def score(x, sigma):
        x = (x + np.pi) % (2 * np.pi) - np.pi
        sign = np.sign(x)
        x = np.log(np.abs(x) / np.pi)
        x = (x - np.log(X_MIN)) / (0 - np.log(X_MIN)) * T_X_N
        x = np.round(np.clip(x, 0, T_X_N)).astype(int)
        sigma = np.log(sigma / np.pi)
        sigma = (sigma - np.log(SIGMA_MIN)) / (np.log(SIGMA_MAX) - np.log(SIGMA_MIN)) * SIGMA_N
        sigma = np.round(np.clip(sigma, 0, SIGMA_N)).astype(int)
        return -sign * score_[sigma, x]

    @staticmethod
    def sample(sigma, rng):
        out = sigma * rng.randn(*sigma.shape)
        out = (out + np.pi) % (2 * np.pi) - np.pi
        return out

    @staticmethod
    def score_norm(sigma):
        sigma = np.log(sigma / np.pi)
        sigma = (sigma - np.log(SIGMA_MIN)) / (np.log(SIGMA_MAX) - np.log(SIGMA_MIN)) * SIGMA_N
        sigma = np.round(np.clip(sigma, 0, SIGMA_N)).astype(int)
        return score_norm_[sigma]


_rng = np.random.RandomState(0)
score_norm_ = torus.score(
    torus.sample(_sigma[None].repeat(200, 0).flatten(), _rng),
    _sigma[None].repeat(200, 0).flatten()
).reshape(200, -1)
score_norm_ = (score_norm_ ** 2).mean(0)


# ---- utils/diffusion_utils.py ----
def t_to_sigma(t_tr, t_rot, t_tor, args):
    tr_sigma = args.tr_sigma_min ** (1-t_tr) * args.tr_sigma_max ** t_tr
    rot_sigma = args.rot_sigma_min ** (1-t_rot) * args.rot_sigma_max ** t_rot
    tor_sigma = args.tor_sigma_min ** (1-t_tor) * args.tor_sigma_max ** t_tor
    return tr_sigma, rot_sigma, tor_sigma


# ---- utils/training.py ----
def loss_function(tr_pred, rot_pred, tor_pred, sidechain_pred, data, t_to_sigma, device, tr_weight=1, rot_weight=1,
                  tor_weight=1, backbone_weight=0, sidechain_weight=0, apply_mean=True, no_torsion=False):
    tr_sigma, rot_sigma, tor_sigma = t_to_sigma(
        *[torch.cat([d.complex_t[noise_type] for d in data]) if device.type == 'cuda' else data.complex_t[noise_type]
          for noise_type in ['tr', 'rot', 'tor']])
    mean_dims = (0, 1) if apply_mean else 1

    # translation component
    tr_score = torch.cat([d.tr_score for d in data], dim=0) if device.type == 'cuda' else data.tr_score
    tr_sigma = tr_sigma.unsqueeze(-1)
    tr_loss = ((tr_pred.cpu() - tr_score.cpu()) ** 2 * tr_sigma.cpu() ** 2).mean(dim=mean_dims)
    tr_base_loss = (tr_score ** 2 * tr_sigma ** 2).mean(dim=mean_dims).detach()

    # rotation component
    rot_score = torch.cat([d.rot_score for d in data], dim=0) if device.type == 'cuda' else data.rot_score
    rot_score_norm = so3.score_norm(rot_sigma.cpu()).unsqueeze(-1)
    rot_loss = (((rot_pred.cpu() - rot_score.cpu()) / rot_score_norm) ** 2).mean(dim=mean_dims)
    rot_base_loss = ((rot_score.cpu() / rot_score_norm) ** 2).mean(dim=mean_dims).detach()

    # torsion component
    if not no_torsion:
        edge_tor_sigma = torch.from_numpy(
            np.concatenate([d.tor_sigma_edge for d in data] if device.type == 'cuda' else data.tor_sigma_edge))
        tor_score = torch.cat([d.tor_score for d in data], dim=0) if device.type == 'cuda' else data.tor_score
        tor_score_norm2 = torch.tensor(torus.score_norm(edge_tor_sigma.cpu().numpy())).float()
        tor_loss = ((tor_pred.cpu() - tor_score.cpu()) ** 2 / tor_score_norm2)
        tor_base_loss = ((tor_score.cpu() ** 2 / tor_score_norm2)).detach()
        if apply_mean:
            tor_loss, tor_base_loss = tor_loss.mean() * torch.ones(1, dtype=torch.float), tor_base_loss.mean() * torch.ones(1, dtype=torch.float)
        else:
            index = torch.cat([torch.ones(d['ligand'].edge_mask.sum()) * i for i, d in
                               enumerate(data)]).long() if device.type == 'cuda' else data['ligand'].batch[
                data['ligand', 'ligand'].edge_index[0][data['ligand'].edge_mask]]
            num_graphs = len(data) if device.type == 'cuda' else data.num_graphs
            t_l, t_b_l, c = torch.zeros(num_graphs), torch.zeros(num_graphs), torch.zeros(num_graphs)
            c.index_add_(0, index, torch.ones(tor_loss.shape))
            c = c + 0.0001
            t_l.index_add_(0, index, tor_loss)
            t_b_l.index_add_(0, index, tor_base_loss)
            tor_loss, tor_base_loss = t_l / c, t_b_l / c
    else:
        if apply_mean:
            tor_loss, tor_base_loss = torch.zeros(1, dtype=torch.float), torch.zeros(1, dtype=torch.float)
        else:
            tor_loss, tor_base_loss = torch.zeros(len(rot_loss), dtype=torch.float), torch.zeros(len(rot_loss), dtype=torch.float)

    if backbone_weight > 0:
        backbone_vecs = torch.cat([d['receptor'].side_chain_vecs.cpu() for d in data], dim=0) if device.type == 'cuda' else data['receptor'].side_chain_vecs
        backbone_vecs = backbone_vecs[:, 4:]
        backbone_pred = sidechain_pred[:, 4:]

        backbone_base_loss = (backbone_vecs ** 2).detach().mean(dim=1) + 0.0001
        backbone_loss = ((backbone_pred.cpu() - backbone_vecs) ** 2).mean(dim=1) / backbone_base_loss.mean()
        backbone_base_loss = backbone_base_loss / backbone_base_loss.mean()
        if apply_mean:
            backbone_loss, backbone_base_loss = backbone_loss.mean() * torch.ones(1, dtype=torch.float), backbone_base_loss.mean() * torch.ones(1, dtype=torch.float)
        else:
            index = torch.cat([torch.ones((d['receptor'].pos.shape[0])) * i for i, d in enumerate(data)], dim=0).long() if device.type == 'cuda' else data['receptor'].batch
            num_graphs = len(data) if device.type == 'cuda' else data.num_graphs
            s_l, s_b_l, c = torch.zeros(num_graphs), torch.zeros(num_graphs), torch.zeros(num_graphs)
            c.index_add_(0, index, torch.ones(backbone_loss.shape[0]))
            c = c + 0.0001
            s_l.index_add_(0, index, backbone_loss)
            s_b_l.index_add_(0, index, backbone_base_loss)
            backbone_loss, backbone_base_loss = s_l / c, s_b_l / c
    else:
        if apply_mean:
            backbone_loss, backbone_base_loss = torch.zeros(1, dtype=torch.float), torch.zeros(1, dtype=torch.float)
        else:
            backbone_loss, backbone_base_loss = torch.zeros(len(rot_loss), dtype=torch.float), torch.zeros(len(rot_loss), dtype=torch.float)

    if sidechain_weight > 0:
        raise NotImplementedError("sidechain prediction is not part of this program")
    else:
        if apply_mean:
            sidechain_loss, sidechain_base_loss = torch.zeros(1, dtype=torch.float), torch.zeros(1, dtype=torch.float)
        else:
            sidechain_loss, sidechain_base_loss = torch.zeros(len(rot_loss), dtype=torch.float), torch.zeros(
                len(rot_loss), dtype=torch.float)

    loss = tr_loss * tr_weight + rot_loss * rot_weight + tor_loss * tor_weight + sidechain_loss * sidechain_weight + backbone_loss * backbone_weight
    return loss, tr_loss.detach(), rot_loss.detach(), tor_loss.detach(), backbone_loss.detach(), sidechain_loss.detach(), \
           tr_base_loss, rot_base_loss, tor_base_loss, backbone_base_loss, sidechain_base_loss


class _Store:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class HeteroBatch:
    """The attributes and node/edge stores of a torch_geometric HeteroData batch that loss_function reads."""

    def __init__(self, stores, **attrs):
        self._stores = stores
        self.__dict__.update(attrs)

    def __getitem__(self, key):
        return self._stores[key]


class Args:
    tr_sigma_min, tr_sigma_max = 0.1, 19.0
    rot_sigma_min, rot_sigma_max = 0.03, 1.55
    tor_sigma_min, tor_sigma_max = 0.0314, 3.14


compiled_loss_function = torch.compile(loss_function)


def make():
    torch.manual_seed(0)
    num_graphs, n_edges = 2, 6
    edge_index = torch.tensor([[0, 1, 2, 4, 5, 6], [1, 2, 3, 5, 6, 7]])
    edge_mask = torch.tensor([True, True, False, True, True, True])
    data = HeteroBatch(
        {
            'ligand': _Store(edge_mask=edge_mask, batch=torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])),
            ('ligand', 'ligand'): _Store(edge_index=edge_index),
        },
        complex_t={'tr': torch.rand(num_graphs), 'rot': torch.rand(num_graphs), 'tor': torch.rand(num_graphs)},
        tr_score=torch.randn(num_graphs, 3),
        rot_score=torch.randn(num_graphs, 3),
        tor_score=torch.randn(5),
        tor_sigma_edge=[np.array([0.2, 0.2]), np.array([1.1, 1.1, 1.1])],
        num_graphs=num_graphs,
    )
    tr_pred, rot_pred, tor_pred = torch.randn(num_graphs, 3), torch.randn(num_graphs, 3), torch.randn(5)
    t_to_sigma_fn = functools.partial(t_to_sigma, args=Args())
    device = torch.device('cpu')
    return loss_function, [
        (tr_pred, rot_pred, tor_pred, None, data, t_to_sigma_fn, device, 0.33, 0.33, 0.33),
        (tr_pred, rot_pred, tor_pred, None, data, t_to_sigma_fn, device, 0.33, 0.33, 0.33, 0, 0, False),
        (tr_pred, rot_pred, tor_pred, None, data, t_to_sigma_fn, device, 0.33, 0.33, 0.33, 0, 0, True, True),
    ]
