"""disentangling-vae beta-TCVAE training iteration: BtcvaeLoss with minibatch stratified sampling, `storer['loss'].append(loss.item())` into a defaultdict when the step is a recording step, `loss.item()` returned from the compiled train iteration.

Source: YannDubs/disentangling-vae@f0452191bab6d94eba0b4e6a065f74dcfd54ac52:disvae/models/losses.py:52-115,316-391,394-480,511-548
Also: disvae/utils/math.py:7-82 (matrix_log_density_gaussian, log_density_gaussian,
log_importance_weight_matrix), disvae/training.py:_train_iteration, disvae/models/vae.py:reparameterize/forward.
Kept: BaseLoss._pre_call (record_loss_every gate), BtcvaeLoss.__call__,
_reconstruction_loss (bernoulli/gaussian/laplace), _kl_normal_loss with its
per-dimension storer loop, linear_annealing, _get_log_pz_qz_prodzi_qzCx, the
Trainer's _train_iteration (zero_grad/backward/step, try/except ValueError,
`return loss.item()`), compiled as `torch.compile(trainer._train_iteration)`.
Simplified: the Burgess conv encoder/decoder are replaced by a one-layer
linear encoder and decoder over 1x4x4 images; latent_dim 3, batch 4;
no tqdm/progress bar.
"""
import abc
import math
from collections import defaultdict

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch import optim

RECON_DIST = ["bernoulli", "laplace", "gaussian"]


def matrix_log_density_gaussian(x, mu, logvar):
    batch_size, dim = x.shape
    x = x.view(batch_size, 1, dim)
    mu = mu.view(1, batch_size, dim)
    logvar = logvar.view(1, batch_size, dim)
    return log_density_gaussian(x, mu, logvar)


def log_density_gaussian(x, mu, logvar):
    normalization = - 0.5 * (math.log(2 * math.pi) + logvar)
    inv_var = torch.exp(-logvar)
    log_density = normalization - 0.5 * ((x - mu)**2 * inv_var)
    return log_density


def log_importance_weight_matrix(batch_size, dataset_size):
    N = dataset_size
    M = batch_size - 1
    strat_weight = (N - M) / (N * M)
    W = torch.Tensor(batch_size, batch_size).fill_(1 / M)
    W.view(-1)[::M + 1] = 1 / N
    W.view(-1)[1::M + 1] = strat_weight
    W[M - 1, 0] = strat_weight
    return W.log()


class BaseLoss(abc.ABC):
    def __init__(self, record_loss_every=50, rec_dist="bernoulli", steps_anneal=0):
        self.n_train_steps = 0
        self.record_loss_every = record_loss_every
        self.rec_dist = rec_dist
        self.steps_anneal = steps_anneal

    @abc.abstractmethod
    def __call__(self, data, recon_data, latent_dist, is_train, storer, **kwargs):
        """Calculates loss for a batch of data."""

    def _pre_call(self, is_train, storer):
        if is_train:
            self.n_train_steps += 1

        if not is_train or self.n_train_steps % self.record_loss_every == 1:
            storer = storer
        else:
            storer = None

        return storer


class BtcvaeLoss(BaseLoss):
    def __init__(self, n_data, alpha=1., beta=6., gamma=1., is_mss=True, **kwargs):
        super().__init__(**kwargs)
        self.n_data = n_data
        self.beta = beta
        self.alpha = alpha
        self.gamma = gamma
        self.is_mss = is_mss  # minibatch stratified sampling

    def __call__(self, data, recon_batch, latent_dist, is_train, storer,
                 latent_sample=None):
        storer = self._pre_call(is_train, storer)
        batch_size, latent_dim = latent_sample.shape

        rec_loss = _reconstruction_loss(data, recon_batch,
                                        storer=storer,
                                        distribution=self.rec_dist)
        log_pz, log_qz, log_prod_qzi, log_q_zCx = _get_log_pz_qz_prodzi_qzCx(latent_sample,
                                                                             latent_dist,
                                                                             self.n_data,
                                                                             is_mss=self.is_mss)
        # I[z;x] = KL[q(z,x)||q(x)q(z)] = E_x[KL[q(z|x)||q(z)]]
        mi_loss = (log_q_zCx - log_qz).mean()
        # TC[z] = KL[q(z)||\prod_i z_i]
        tc_loss = (log_qz - log_prod_qzi).mean()
        # dw_kl_loss is KL[q(z)||p(z)] instead of usual KL[q(z|x)||p(z))]
        dw_kl_loss = (log_prod_qzi - log_pz).mean()

        anneal_reg = (linear_annealing(0, 1, self.n_train_steps, self.steps_anneal)
                      if is_train else 1)

        # total loss
        loss = rec_loss + (self.alpha * mi_loss +
                           self.beta * tc_loss +
                           anneal_reg * self.gamma * dw_kl_loss)

        if storer is not None:
            storer['loss'].append(loss.item())
            storer['mi_loss'].append(mi_loss.item())
            storer['tc_loss'].append(tc_loss.item())
            storer['dw_kl_loss'].append(dw_kl_loss.item())
            # computing this for storing and comparaison purposes
            _ = _kl_normal_loss(*latent_dist, storer)

        return loss


def _reconstruction_loss(data, recon_data, distribution="bernoulli", storer=None):
    batch_size, n_chan, height, width = recon_data.size()
    is_colored = n_chan == 3

    if distribution == "bernoulli":
        loss = F.binary_cross_entropy(recon_data, data, reduction="sum")
    elif distribution == "gaussian":
        # loss in [0,255] space but normalized by 255 to not be too big
        loss = F.mse_loss(recon_data * 255, data * 255, reduction="sum") / 255
    elif distribution == "laplace":
        loss = F.l1_loss(recon_data, data, reduction="sum")
        loss = loss * 3  # emperical value to give similar values than bernoulli => use same hyperparam
        loss = loss * (loss != 0)  # masking to avoid nan
    else:
        assert distribution not in RECON_DIST
        raise ValueError("Unkown distribution: {}".format(distribution))

    loss = loss / batch_size

    if storer is not None:
        storer['recon_loss'].append(loss.item())

    return loss


def _kl_normal_loss(mean, logvar, storer=None):
    latent_dim = mean.size(1)
    # batch mean of kl for each latent dimension
    latent_kl = 0.5 * (-1 - logvar + mean.pow(2) + logvar.exp()).mean(dim=0)
    total_kl = latent_kl.sum()

    if storer is not None:
        storer['kl_loss'].append(total_kl.item())
        for i in range(latent_dim):
            storer['kl_loss_' + str(i)].append(latent_kl[i].item())

    return total_kl


def linear_annealing(init, fin, step, annealing_steps):
    """Linear annealing of a parameter."""
    if annealing_steps == 0:
        return fin
    assert fin > init
    delta = fin - init
    annealed = min(init + delta * step / annealing_steps, fin)
    return annealed


def _get_log_pz_qz_prodzi_qzCx(latent_sample, latent_dist, n_data, is_mss=True):
    batch_size, hidden_dim = latent_sample.shape

    # calculate log q(z|x)
    log_q_zCx = log_density_gaussian(latent_sample, *latent_dist).sum(dim=1)

    # calculate log p(z)
    # mean and log var is 0
    zeros = torch.zeros_like(latent_sample)
    log_pz = log_density_gaussian(latent_sample, zeros, zeros).sum(1)

    mat_log_qz = matrix_log_density_gaussian(latent_sample, *latent_dist)

    if is_mss:
        # use stratification
        log_iw_mat = log_importance_weight_matrix(batch_size, n_data).to(latent_sample.device)
        mat_log_qz = mat_log_qz + log_iw_mat.view(batch_size, batch_size, 1)

    log_qz = torch.logsumexp(mat_log_qz.sum(2), dim=1, keepdim=False)
    log_prod_qzi = torch.logsumexp(mat_log_qz, dim=1, keepdim=False).sum(1)

    return log_pz, log_qz, log_prod_qzi, log_q_zCx


class Encoder(nn.Module):
    def __init__(self, img_size, latent_dim=3):
        super().__init__()
        self.latent_dim = latent_dim
        self.lin = nn.Linear(math.prod(img_size), latent_dim * 2)

    def forward(self, x):
        batch_size = x.size(0)
        mu_logvar = self.lin(x.view(batch_size, -1))
        mu, logvar = mu_logvar.view(-1, self.latent_dim, 2).unbind(-1)
        return mu, logvar


class Decoder(nn.Module):
    def __init__(self, img_size, latent_dim=3):
        super().__init__()
        self.img_size = img_size
        self.lin = nn.Linear(latent_dim, math.prod(img_size))

    def forward(self, z):
        batch_size = z.size(0)
        return torch.sigmoid(self.lin(z)).view(batch_size, *self.img_size)


class VAE(nn.Module):
    def __init__(self, img_size, latent_dim):
        super().__init__()
        self.latent_dim = latent_dim
        self.img_size = img_size
        self.encoder = Encoder(img_size, latent_dim)
        self.decoder = Decoder(img_size, latent_dim)

    def reparameterize(self, mean, logvar):
        if self.training:
            std = torch.exp(0.5 * logvar)
            eps = torch.randn_like(std)
            return mean + std * eps
        else:
            # Reconstruction mode
            return mean

    def forward(self, x):
        latent_dist = self.encoder(x)
        latent_sample = self.reparameterize(*latent_dist)
        reconstruct = self.decoder(latent_sample)
        return reconstruct, latent_dist, latent_sample


class Trainer():
    def __init__(self, model, optimizer, loss_f, device=torch.device("cpu")):
        self.device = device
        self.model = model.to(self.device)
        self.loss_f = loss_f
        self.optimizer = optimizer

    def _train_iteration(self, data, storer):
        batch_size, channel, height, width = data.size()
        data = data.to(self.device)

        try:
            recon_batch, latent_dist, latent_sample = self.model(data)
            loss = self.loss_f(data, recon_batch, latent_dist, self.model.training,
                               storer, latent_sample=latent_sample)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        except ValueError:
            # for losses that use multiple optimizers (e.g. Factor)
            loss = self.loss_f.call_optimize(data, self.model, self.optimizer, storer)

        return loss.item()


def build_trainer(record_loss_every=50, rec_dist="bernoulli", steps_anneal=0):
    model = VAE((1, 4, 4), 3)
    optimizer = optim.Adam(model.parameters(), lr=5e-4)
    loss_f = BtcvaeLoss(n_data=100, record_loss_every=record_loss_every,
                        rec_dist=rec_dist, steps_anneal=steps_anneal)
    trainer = Trainer(model, optimizer, loss_f)
    trainer._train_iteration = torch.compile(trainer._train_iteration)
    return trainer


def make():
    torch.manual_seed(0)
    model = VAE((1, 4, 4), 3)
    optimizer = optim.Adam(model.parameters(), lr=5e-4)
    # record_loss_every=2: the odd-numbered steps record into the storer, the even ones do not
    loss_f = BtcvaeLoss(n_data=100, record_loss_every=2, rec_dist="laplace", steps_anneal=10)
    trainer = Trainer(model, optimizer, loss_f)
    data = torch.rand(4, 1, 4, 4)
    return trainer._train_iteration, [(data, defaultdict(list)), (data, defaultdict(list)), (data, None)]
