"""World Models MDRNN training loss: multi-step LSTM world model over the latent sequence, a mixture-density
(GMM) loss with a max-shifted log-sum-exp, BCE on terminals and an optional reward MSE switched by a bool argument.

Source: ctallec/world-models@d6abd9ce97409734a766eb67ccf0d1967ba9bf0c:models/mdrnn.py:10-105 (gmm_loss, _MDRNNBase,
MDRNN), trainmdrnn.py:33-35,56,109-144 (constants, model construction, get_loss), utils/misc.py:14-15 (sizes)
Kept: gmm_loss and MDRNN.forward verbatim, get_loss verbatim (the list-comprehension transpose of the five
arrays, the module-level `mdrnn`, `mse = 0` / `scale = LSIZE + 1` when the reward is not modelled, the returned
dict), the constants plumbing.
Simplified: LSIZE 8, RSIZE 16, sequences of 6 with batch 2 (instead of 32/256/32/16); the VAE encoding
(to_latent) and the optimizer step are left out; get_loss is compiled as a function.
"""
import torch
import torch.nn as nn
import torch.nn.functional as f
from torch.distributions.normal import Normal

# Hardcoded for now
ASIZE, LSIZE, RSIZE = 3, 8, 16

# constants
BSIZE = 2
SEQ_LEN = 6


def gmm_loss(batch, mus, sigmas, logpi, reduce=True): # pylint: disable=too-many-arguments
    """ Computes the gmm loss.

    Compute minus the log probability of batch under the GMM model described
    by mus, sigmas, pi.
    """
    batch = batch.unsqueeze(-2)
    normal_dist = Normal(mus, sigmas)
    g_log_probs = normal_dist.log_prob(batch)
    g_log_probs = logpi + torch.sum(g_log_probs, dim=-1)
    max_log_probs = torch.max(g_log_probs, dim=-1, keepdim=True)[0]
    g_log_probs = g_log_probs - max_log_probs

    g_probs = torch.exp(g_log_probs)
    probs = torch.sum(g_probs, dim=-1)

    log_prob = max_log_probs.squeeze() + torch.log(probs)
    if reduce:
        return - torch.mean(log_prob)
    return - log_prob

class _MDRNNBase(nn.Module):
    def __init__(self, latents, actions, hiddens, gaussians):
        super().__init__()
        self.latents = latents
        self.actions = actions
        self.hiddens = hiddens
        self.gaussians = gaussians

        self.gmm_linear = nn.Linear(
            hiddens, (2 * latents + 1) * gaussians + 2)

    def forward(self, *inputs):
        pass

class MDRNN(_MDRNNBase):
    """ MDRNN model for multi steps forward """
    def __init__(self, latents, actions, hiddens, gaussians):
        super().__init__(latents, actions, hiddens, gaussians)
        self.rnn = nn.LSTM(latents + actions, hiddens)

    def forward(self, actions, latents): # pylint: disable=arguments-differ
        """ MULTI STEPS forward. """
        seq_len, bs = actions.size(0), actions.size(1)

        ins = torch.cat([actions, latents], dim=-1)
        outs, _ = self.rnn(ins)
        gmm_outs = self.gmm_linear(outs)

        stride = self.gaussians * self.latents

        mus = gmm_outs[:, :, :stride]
        mus = mus.view(seq_len, bs, self.gaussians, self.latents)

        sigmas = gmm_outs[:, :, stride:2 * stride]
        sigmas = sigmas.view(seq_len, bs, self.gaussians, self.latents)
        sigmas = torch.exp(sigmas)

        pi = gmm_outs[:, :, 2 * stride: 2 * stride + self.gaussians]
        pi = pi.view(seq_len, bs, self.gaussians)
        logpi = f.log_softmax(pi, dim=-1)

        rs = gmm_outs[:, :, -2]

        ds = gmm_outs[:, :, -1]

        return mus, sigmas, logpi, rs, ds


torch.manual_seed(0)
mdrnn = MDRNN(LSIZE, ASIZE, RSIZE, 5)


@torch.compile
def get_loss(latent_obs, action, reward, terminal,
             latent_next_obs, include_reward: bool):
    """ Compute losses. """
    latent_obs, action,\
        reward, terminal,\
        latent_next_obs = [arr.transpose(1, 0)
                           for arr in [latent_obs, action,
                                       reward, terminal,
                                       latent_next_obs]]
    mus, sigmas, logpi, rs, ds = mdrnn(action, latent_obs)
    gmm = gmm_loss(latent_next_obs, mus, sigmas, logpi)
    bce = f.binary_cross_entropy_with_logits(ds, terminal)
    if include_reward:
        mse = f.mse_loss(rs, reward)
        scale = LSIZE + 2
    else:
        mse = 0
        scale = LSIZE + 1
    loss = (gmm + bce + mse) / scale
    return dict(gmm=gmm, bce=bce, mse=mse, loss=loss)


def make():
    torch.manual_seed(0)
    latent_obs = torch.randn(BSIZE, SEQ_LEN, LSIZE)
    action = torch.rand(BSIZE, SEQ_LEN, ASIZE) * 2 - 1
    reward = torch.randn(BSIZE, SEQ_LEN)
    terminal = torch.zeros(BSIZE, SEQ_LEN)
    terminal[:, -1] = 1.
    latent_next_obs = torch.randn(BSIZE, SEQ_LEN, LSIZE)
    args = (latent_obs, action, reward, terminal, latent_next_obs)
    return get_loss._torchdynamo_orig_callable, [args + (True,), args + (False,)]
