"""Random Network Distillation agent: `compute_intrinsic_reward` wraps the normalized NumPy observations with `torch.FloatTensor(...).to(device)`, runs the frozen target and the trained predictor CNNs, and returns the squared error through `.data.cpu().numpy()`.

Source: jcwleo/random-network-distillation-pytorch@1f991153f993a8949f0415ea88eef1ca9b9b8bf3:agents.py:13-80
Kept: RNDAgent.__init__ plumbing for the RND model and device,
compute_intrinsic_reward verbatim; RNDModel and Flatten from model.py
(orthogonal init, frozen target); the observation normalization of train.py
(`((obs - obs_rms.mean) / np.sqrt(obs_rms.var)).clip(-5, 5)`) in make().
Simplified: the actor-critic network, optimizer and PPO update are not built;
a batch of 3 single-channel 84x84 frames.
"""
import numpy as np

import torch.nn as nn
import torch
from torch.nn import init


class Flatten(nn.Module):
    def forward(self, input):
        return input.view(input.size(0), -1)


class RNDModel(nn.Module):
    def __init__(self, input_size, output_size):
        super(RNDModel, self).__init__()

        self.input_size = input_size
        self.output_size = output_size

        feature_output = 7 * 7 * 64
        self.predictor = nn.Sequential(
            nn.Conv2d(
                in_channels=1,
                out_channels=32,
                kernel_size=8,
                stride=4),
            nn.LeakyReLU(),
            nn.Conv2d(
                in_channels=32,
                out_channels=64,
                kernel_size=4,
                stride=2),
            nn.LeakyReLU(),
            nn.Conv2d(
                in_channels=64,
                out_channels=64,
                kernel_size=3,
                stride=1),
            nn.LeakyReLU(),
            Flatten(),
            nn.Linear(feature_output, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 512)
        )

        self.target = nn.Sequential(
            nn.Conv2d(
                in_channels=1,
                out_channels=32,
                kernel_size=8,
                stride=4),
            nn.LeakyReLU(),
            nn.Conv2d(
                in_channels=32,
                out_channels=64,
                kernel_size=4,
                stride=2),
            nn.LeakyReLU(),
            nn.Conv2d(
                in_channels=64,
                out_channels=64,
                kernel_size=3,
                stride=1),
            nn.LeakyReLU(),
            Flatten(),
            nn.Linear(feature_output, 512)
        )

        for p in self.modules():
            if isinstance(p, nn.Conv2d):
                init.orthogonal_(p.weight, np.sqrt(2))
                p.bias.data.zero_()

            if isinstance(p, nn.Linear):
                init.orthogonal_(p.weight, np.sqrt(2))
                p.bias.data.zero_()

        for param in self.target.parameters():
            param.requires_grad = False

    def forward(self, next_obs):
        target_feature = self.target(next_obs)
        predict_feature = self.predictor(next_obs)

        return predict_feature, target_feature


class RNDAgent(object):
    def __init__(
            self,
            input_size,
            output_size,
            num_env,
            num_step,
            gamma,
            lam=0.95,
            learning_rate=1e-4,
            ent_coef=0.01,
            clip_grad_norm=0.5,
            epoch=3,
            batch_size=128,
            ppo_eps=0.1,
            update_proportion=0.25,
            use_gae=True,
            use_cuda=False,
            use_noisy_net=False):
        self.num_env = num_env
        self.output_size = output_size
        self.input_size = input_size
        self.num_step = num_step
        self.gamma = gamma
        self.lam = lam
        self.epoch = epoch
        self.batch_size = batch_size
        self.use_gae = use_gae
        self.ent_coef = ent_coef
        self.ppo_eps = ppo_eps
        self.clip_grad_norm = clip_grad_norm
        self.update_proportion = update_proportion
        self.device = torch.device('cuda' if use_cuda else 'cpu')

        self.rnd = RNDModel(input_size, output_size)
        self.rnd = self.rnd.to(self.device)

    def compute_intrinsic_reward(self, next_obs):
        next_obs = torch.FloatTensor(next_obs).to(self.device)

        target_next_feature = self.rnd.target(next_obs)
        predict_next_feature = self.rnd.predictor(next_obs)
        intrinsic_reward = (target_next_feature - predict_next_feature).pow(2).sum(1) / 2

        return intrinsic_reward.data.cpu().numpy()


def build_agent(num_env=2):
    agent = RNDAgent(input_size=4, output_size=18, num_env=num_env, num_step=128, gamma=0.999)
    agent.compute_intrinsic_reward = torch.compile(agent.compute_intrinsic_reward)
    return agent


def make():
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    agent = RNDAgent(input_size=4, output_size=18, num_env=2, num_step=128, gamma=0.999)
    obs_mean = rng.rand(1, 1, 84, 84).astype(np.float32)
    obs_var = 0.5 + rng.rand(1, 1, 84, 84).astype(np.float32)
    frames = rng.rand(3, 1, 84, 84).astype(np.float32)
    next_obs = ((frames - obs_mean) / np.sqrt(obs_var)).clip(-5, 5)
    return agent.compute_intrinsic_reward, [(next_obs,)]
