"""DreamerV3 (NM512 port) critic update: `_compute_target` builds lambda-returns with `static_scan_for_lambda_return` (reversed Python loop, generator of per-step inputs), the value head is a `DiscDist` whose twohot `log_prob` bins targets with `len(self.buckets)` and `torch.where(equal, 1, ...)`, and the loss is weighted by a cumulative discount.

Source: NM512/dreamerv3-torch@02c3d45fcfc488151dd6ac7e3e905b55031c8d8f:models.py:265-360
Also: tools.py@03d91cb2c1ee3c91b72b03f4bb58673bae5aaacf (symlog, symexp, DiscDist,
static_scan_for_lambda_return, lambda_return).
Kept: ImagBehavior._compute_target verbatim (cont head discount, the future_entropy
schedule checks, value(...).mode()), the value-loss block of ImagBehavior._train,
and DiscDist / lambda_return / static_scan_for_lambda_return verbatim.
Simplified: networks.MLP is a two-layer head returning DiscDist for
"symlog_disc"; the world model only provides heads["cont"] and dynamics.get_feat (the RSSM's
feature lookup); the
imagined trajectory comes from make(); the optimizer call is dropped (the compiled
entry returns value_loss and the target); 16 features, horizon 5, batch 3.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import distributions as torchd


def symlog(x):
    return torch.sign(x) * torch.log(torch.abs(x) + 1.0)


def symexp(x):
    return torch.sign(x) * (torch.exp(torch.abs(x)) - 1.0)


class DiscDist:
    def __init__(
        self,
        logits,
        low=-20.0,
        high=20.0,
        transfwd=symlog,
        transbwd=symexp,
        device="cuda",
    ):
        self.logits = logits
        self.probs = torch.softmax(logits, -1)
        self.buckets = torch.linspace(low, high, steps=255).to(device)
        self.width = (self.buckets[-1] - self.buckets[0]) / 255
        self.transfwd = transfwd
        self.transbwd = transbwd

    def mean(self):
        _mean = self.probs * self.buckets
        return self.transbwd(torch.sum(_mean, dim=-1, keepdim=True))

    def mode(self):
        _mode = self.probs * self.buckets
        return self.transbwd(torch.sum(_mode, dim=-1, keepdim=True))

    # Inside OneHotCategorical, log_prob is calculated using only max element in targets
    def log_prob(self, x):
        x = self.transfwd(x)
        # x(time, batch, 1)
        below = torch.sum((self.buckets <= x[..., None]).to(torch.int32), dim=-1) - 1
        above = len(self.buckets) - torch.sum(
            (self.buckets > x[..., None]).to(torch.int32), dim=-1
        )
        below = torch.clip(below, 0, len(self.buckets) - 1)
        above = torch.clip(above, 0, len(self.buckets) - 1)
        equal = below == above

        dist_to_below = torch.where(equal, 1, torch.abs(self.buckets[below] - x))
        dist_to_above = torch.where(equal, 1, torch.abs(self.buckets[above] - x))
        total = dist_to_below + dist_to_above
        weight_below = dist_to_above / total
        weight_above = dist_to_below / total
        target = (
            F.one_hot(below, num_classes=len(self.buckets)) * weight_below[..., None]
            + F.one_hot(above, num_classes=len(self.buckets)) * weight_above[..., None]
        )
        log_pred = self.logits - torch.logsumexp(self.logits, -1, keepdim=True)
        target = target.squeeze(-2)

        return (target * log_pred).sum(-1)


def static_scan_for_lambda_return(fn, inputs, start):
    last = start
    indices = range(inputs[0].shape[0])
    indices = reversed(indices)
    flag = True
    for index in indices:
        # (inputs, pcont) -> (inputs[index], pcont[index])
        inp = lambda x: (_input[x] for _input in inputs)
        last = fn(last, *inp(index))
        if flag:
            outputs = last
            flag = False
        else:
            outputs = torch.cat([outputs, last], dim=-1)
    outputs = torch.reshape(outputs, [outputs.shape[0], outputs.shape[1], 1])
    outputs = torch.flip(outputs, [1])
    outputs = torch.unbind(outputs, dim=0)
    return outputs


def lambda_return(reward, value, pcont, bootstrap, lambda_, axis):
    # Setting lambda=1 gives a discounted Monte Carlo return.
    # Setting lambda=0 gives a fixed 1-step return.
    # assert reward.shape.ndims == value.shape.ndims, (reward.shape, value.shape)
    assert len(reward.shape) == len(value.shape), (reward.shape, value.shape)
    if isinstance(pcont, (int, float)):
        pcont = pcont * torch.ones_like(reward)
    dims = list(range(len(reward.shape)))
    dims = [axis] + dims[1:axis] + [0] + dims[axis + 1 :]
    if axis != 0:
        reward = reward.permute(dims)
        value = value.permute(dims)
        pcont = pcont.permute(dims)
    if bootstrap is None:
        bootstrap = torch.zeros_like(value[-1])
    next_values = torch.cat([value[1:], bootstrap[None]], 0)
    inputs = reward + pcont * next_values * (1 - lambda_)
    # reimplement to optimize performance
    returns = static_scan_for_lambda_return(
        lambda agg, cur0, cur1: cur0 + cur1 * lambda_ * agg, (inputs, pcont), bootstrap
    )
    if axis != 0:
        returns = returns.permute(dims)
    return returns


class MLP(nn.Module):
    def __init__(self, inp_dim, shape, units, dist="normal", device="cuda"):
        super().__init__()
        self._shape = shape
        self._dist = dist
        self._device = device
        self.layers = nn.Sequential(nn.Linear(inp_dim, units), nn.LayerNorm(units), nn.SiLU())
        self.mean_layer = nn.Linear(units, shape[0] if shape else 1)

    def forward(self, features):
        out = self.mean_layer(self.layers(features))
        if self._dist == "symlog_disc":
            return DiscDist(logits=out, device=self._device)
        return torchd.independent.Independent(torchd.bernoulli.Bernoulli(logits=out), 1)


class RSSM(nn.Module):
    def get_feat(self, state):
        return state["feat"]


class WorldModel(nn.Module):
    def __init__(self, feat_size):
        super().__init__()
        self.dynamics = RSSM()
        self.heads = nn.ModuleDict({"cont": MLP(feat_size, [], 16, dist="binary")})


class Config:
    discount = 0.997
    discount_lambda = 0.95
    future_entropy = False
    actor_entropy = staticmethod(lambda: 3e-4)
    actor_state_entropy = staticmethod(lambda: 0.0)
    value_decay = 0.0
    device = "cpu"


class ImagBehavior(nn.Module):
    def __init__(self, config, world_model, feat_size=16):
        super().__init__()
        self._config = config
        self._world_model = world_model
        self.value = MLP(feat_size, (255,), 16, "symlog_disc", device=config.device)

    def _compute_target(
        self, imag_feat, imag_state, imag_action, reward, actor_ent, state_ent
    ):
        if "cont" in self._world_model.heads:
            inp = self._world_model.dynamics.get_feat(imag_state)
            discount = self._config.discount * self._world_model.heads["cont"](inp).mean
        else:
            discount = self._config.discount * torch.ones_like(reward)
        if self._config.future_entropy and self._config.actor_entropy() > 0:
            reward += self._config.actor_entropy() * actor_ent
        if self._config.future_entropy and self._config.actor_state_entropy() > 0:
            reward += self._config.actor_state_entropy() * state_ent
        value = self.value(imag_feat).mode()
        # value(15, 960, ch)
        # action(15, 960, ch)
        # discount(15, 960, ch)
        target = lambda_return(
            reward[:-1],
            value[:-1],
            discount[:-1],
            bootstrap=value[-1],
            lambda_=self._config.discount_lambda,
            axis=0,
        )
        weights = torch.cumprod(
            torch.cat([torch.ones_like(discount[:1]), discount[:-1]], 0), 0
        ).detach()
        return target, weights, value[:-1]

    def value_update(self, imag_feat, imag_state, imag_action, reward, actor_ent, state_ent):
        target, weights, base = self._compute_target(
            imag_feat, imag_state, imag_action, reward, actor_ent, state_ent
        )
        value_input = imag_feat
        value = self.value(value_input[:-1].detach())
        target = torch.stack(target, dim=1)
        # (time, batch, 1), (time, batch, 1) -> (time, batch)
        value_loss = -value.log_prob(target.detach())
        if self._config.value_decay:
            value_loss += self._config.value_decay * value.mode()
        # (time, batch, 1), (time, batch, 1) -> (1,)
        value_loss = torch.mean(weights[:-1] * value_loss[:, :, None])
        return value_loss, target


def build_behavior():
    return ImagBehavior(Config(), WorldModel(16))


behavior = build_behavior()
value_update = torch.compile(behavior.value_update)


def make():
    torch.manual_seed(0)
    behavior = build_behavior()
    horizon, batch = 5, 3
    imag_feat = torch.randn(horizon, batch, 16)
    imag_state = {"feat": imag_feat}
    imag_action = torch.randn(horizon, batch, 2)
    reward = torch.randn(horizon, batch, 1) * 4
    actor_ent = torch.rand(horizon, batch)
    state_ent = torch.rand(horizon, batch)
    return behavior.value_update, [
        (imag_feat, imag_state, imag_action, reward, actor_ent, state_ent),
        (imag_feat[:2], {"feat": imag_feat[:2]}, imag_action[:2], reward[:2] * 100, actor_ent[:2], state_ent[:2]),
    ]
