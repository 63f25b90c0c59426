"""CleanRL PPO update: the minibatch loss records `clipfracs += [... .float().mean().item()]` under no_grad, normalizes advantages and clips the value loss by config.

Source: vwxyzjn/cleanrl@fe8d8a03c41a7ef5b523e2e354bd01c363e786bb:cleanrl/ppo.py:18-78,94-126,236-285
Kept: the Args dataclass fields the update reads, layer_init, the Agent
(critic/actor MLPs, get_action_and_value with Categorical), and the body of
the minibatch loop verbatim: get_action_and_value on `b_obs[mb_inds]` with a
numpy index array, approx_kl, the clipfracs `.item()`, norm_adv, the clipped
policy loss, the clip_vloss branch and the total loss.
Simplified: the minibatch body is lifted into `ppo_minibatch_loss` (the part
a user compiles; backward/optimizer step stay outside); envs is a namespace
with 4 observation features and 2 actions; batch of 8, minibatch of 4.
"""
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical


@dataclass
class Args:
    num_envs: int = 4
    num_steps: int = 2
    num_minibatches: int = 2
    update_epochs: int = 4
    norm_adv: bool = True
    """Toggles advantages normalization"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient"""
    clip_vloss: bool = True
    """Toggles whether or not to use a clipped loss for the value function, as per the paper."""
    ent_coef: float = 0.01
    """coefficient of the entropy"""
    vf_coef: float = 0.5
    """coefficient of the value function"""
    max_grad_norm: float = 0.5
    target_kl: float = None

    # to be filled in runtime
    batch_size: int = 0
    minibatch_size: int = 0


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(np.array(envs.single_observation_space.shape).prod(), 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(np.array(envs.single_observation_space.shape).prod(), 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, envs.single_action_space.n), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def ppo_minibatch_loss(agent, args, b_obs, b_actions, b_logprobs, b_advantages, b_returns, b_values, mb_inds, clipfracs):
    _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions.long()[mb_inds])
    logratio = newlogprob - b_logprobs[mb_inds]
    ratio = logratio.exp()

    with torch.no_grad():
        # calculate approx_kl http://joschu.net/blog/kl-approx.html
        old_approx_kl = (-logratio).mean()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

    mb_advantages = b_advantages[mb_inds]
    if args.norm_adv:
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

    # Policy loss
    pg_loss1 = -mb_advantages * ratio
    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()

    # Value loss
    newvalue = newvalue.view(-1)
    if args.clip_vloss:
        v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
        v_clipped = b_values[mb_inds] + torch.clamp(
            newvalue - b_values[mb_inds],
            -args.clip_coef,
            args.clip_coef,
        )
        v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
        v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
        v_loss = 0.5 * v_loss_max.mean()
    else:
        v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

    entropy_loss = entropy.mean()
    loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
    return loss, pg_loss, v_loss, entropy_loss, old_approx_kl, approx_kl


compiled_loss = torch.compile(ppo_minibatch_loss)


def make():
    torch.manual_seed(0)
    envs = SimpleNamespace(single_observation_space=SimpleNamespace(shape=(4,)),
                           single_action_space=SimpleNamespace(n=2, shape=()))
    args = Args()
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    agent = Agent(envs)
    b_obs = torch.randn(args.batch_size, 4)
    b_actions = torch.randint(0, 2, (args.batch_size,)).float()
    b_logprobs = -torch.rand(args.batch_size)
    b_advantages = torch.randn(args.batch_size)
    b_returns = torch.randn(args.batch_size)
    b_values = torch.randn(args.batch_size)
    b_inds = np.random.default_rng(0).permutation(args.batch_size)
    plain = Args(norm_adv=False, clip_vloss=False, batch_size=args.batch_size, minibatch_size=args.minibatch_size)
    batch = (b_obs, b_actions, b_logprobs, b_advantages, b_returns, b_values)
    return ppo_minibatch_loss, [
        (agent, args) + batch + (b_inds[:4], []),
        (agent, plain) + batch + (b_inds[4:], []),
    ]
