"""TD3 action selection: `select_action` turns a numpy observation into `torch.FloatTensor(state.reshape(1, -1))`, runs the tanh-scaled Actor and returns `.cpu().data.numpy().flatten()`; main.py adds Gaussian exploration noise in numpy and clips.

Source: sfujim/TD3@34770ccdcb51df6f6c7d85c1ba7e40d71b940d16:TD3.py:14-29,68-102
Also: main.py (`policy.select_action(np.array(state))` in eval_policy and the exploration branch).
Kept: Actor and TD3.__init__/select_action verbatim (tabs kept); Critic kept since __init__ builds it.
Simplified: state_dim 11, action_dim 3, max_action 1.0; the method is compiled with
`policy.select_action = torch.compile(policy.select_action)` as an acting loop would; train/save/load
dropped.
"""
import copy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Implementation of Twin Delayed Deep Deterministic Policy Gradients (TD3)
# Paper: https://arxiv.org/abs/1802.09477


class Actor(nn.Module):
	def __init__(self, state_dim, action_dim, max_action):
		super(Actor, self).__init__()

		self.l1 = nn.Linear(state_dim, 256)
		self.l2 = nn.Linear(256, 256)
		self.l3 = nn.Linear(256, action_dim)
		
		self.max_action = max_action
		

	def forward(self, state):
		a = F.relu(self.l1(state))
		a = F.relu(self.l2(a))
		return self.max_action * torch.tanh(self.l3(a))


class Critic(nn.Module):
	def __init__(self, state_dim, action_dim):
		super(Critic, self).__init__()

		# Q1 architecture
		self.l1 = nn.Linear(state_dim + action_dim, 256)
		self.l2 = nn.Linear(256, 256)
		self.l3 = nn.Linear(256, 1)

		# Q2 architecture
		self.l4 = nn.Linear(state_dim + action_dim, 256)
		self.l5 = nn.Linear(256, 256)
		self.l6 = nn.Linear(256, 1)


	def forward(self, state, action):
		sa = torch.cat([state, action], 1)

		q1 = F.relu(self.l1(sa))
		q1 = F.relu(self.l2(q1))
		q1 = self.l3(q1)

		q2 = F.relu(self.l4(sa))
		q2 = F.relu(self.l5(q2))
		q2 = self.l6(q2)
		return q1, q2


	def Q1(self, state, action):
		sa = torch.cat([state, action], 1)

		q1 = F.relu(self.l1(sa))
		q1 = F.relu(self.l2(q1))
		q1 = self.l3(q1)
		return q1


class TD3(object):
	def __init__(
		self,
		state_dim,
		action_dim,
		max_action,
		discount=0.99,
		tau=0.005,
		policy_noise=0.2,
		noise_clip=0.5,
		policy_freq=2
	):

		self.actor = Actor(state_dim, action_dim, max_action).to(device)
		self.actor_target = copy.deepcopy(self.actor)
		self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

		self.critic = Critic(state_dim, action_dim).to(device)
		self.critic_target = copy.deepcopy(self.critic)
		self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

		self.max_action = max_action
		self.discount = discount
		self.tau = tau
		self.policy_noise = policy_noise
		self.noise_clip = noise_clip
		self.policy_freq = policy_freq

		self.total_it = 0


	def select_action(self, state):
		state = torch.FloatTensor(state.reshape(1, -1)).to(device)
		return self.actor(state).cpu().data.numpy().flatten()



def build_policy():
	return TD3(state_dim=11, action_dim=3, max_action=1.0, policy_noise=0.2, noise_clip=0.5, policy_freq=2)


def act(policy, state, expl_noise=0.1, max_action=1.0, action_dim=3):
	return (
		policy.select_action(np.array(state))
		+ np.random.normal(0, max_action * expl_noise, size=action_dim)
	).clip(-max_action, max_action)


def main():
	policy = build_policy()
	policy.select_action = torch.compile(policy.select_action)
	state = np.zeros(11)
	for _ in range(3):
		state = np.tanh(state + act(policy, state).sum())


def make():
	torch.manual_seed(0)
	policy = build_policy()
	rng = np.random.RandomState(0)
	return policy.select_action, [(rng.randn(11),), (rng.randn(11).astype(np.float32),)]
