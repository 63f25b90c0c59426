"""stable-baselines3 PPO rollout collection: policy step then RolloutBuffer.add with numpy copies.

Source: pytorch/torchdynamo#1382 (https://github.com/pytorch/torchdynamo/issues/1382)
The report decorates `train()` (which runs `PPO("MlpPolicy", "CartPole-v1").learn(10_000)`)
with `torchdynamo.optimize("inductor")`; Dynamo logs breaks in
stable_baselines3/common/buffers.py `RolloutBuffer.add`:
`self.rewards[self.pos] = np.array(reward).copy()`,
`self.episode_starts[self.pos] = np.array(episode_start).copy()`,
`self.values[self.pos] = value.clone().cpu().numpy().flatten()`.
Translated from DLR-RM/stable-baselines3@019aeadc:stable_baselines3/common/buffers.py
(RolloutBuffer.reset/add) and common/on_policy_algorithm.py `collect_rollouts`
(the per-step loop), with the ActorCriticPolicy forward for a discrete action space.
Kept: `.copy()` as in the version the report ran; the `th.no_grad()` policy call,
`actions.cpu().numpy()`, `rollout_buffer.add(...)`, `self.pos`/`self.full` bookkeeping,
Categorical sampling.
Simplified: CartPole is replaced by a stand-in VecEnv that replays recorded numpy
observations/rewards/dones (no gym); no callbacks, no logger, 1 env, 4 steps, 8-unit MLP.
"""
import numpy as np
import torch as th
from torch import nn
from torch.distributions import Categorical


class RolloutBuffer:
    def __init__(self, buffer_size, obs_shape, action_dim, device="cpu", gae_lambda=1, gamma=0.99, n_envs=1):
        self.buffer_size = buffer_size
        self.obs_shape = obs_shape
        self.action_dim = action_dim
        self.pos = 0
        self.full = False
        self.device = device
        self.n_envs = n_envs
        self.gae_lambda = gae_lambda
        self.gamma = gamma
        self.generator_ready = False
        self.reset()

    def reset(self) -> None:
        self.observations = np.zeros((self.buffer_size, self.n_envs, *self.obs_shape), dtype=np.float32)
        self.actions = np.zeros((self.buffer_size, self.n_envs, self.action_dim), dtype=np.float32)
        self.rewards = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        self.returns = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        self.episode_starts = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        self.values = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        self.log_probs = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        self.advantages = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        self.generator_ready = False
        self.pos = 0
        self.full = False

    def add(self, obs, action, reward, episode_start, value, log_prob) -> None:
        if len(log_prob.shape) == 0:
            # Reshape 0-d tensor to avoid error
            log_prob = log_prob.reshape(-1, 1)

        # Reshape to handle multi-dim and discrete action spaces, see GH #970 #1392
        action = action.reshape((self.n_envs, self.action_dim))

        self.observations[self.pos] = np.array(obs).copy()
        self.actions[self.pos] = np.array(action).copy()
        self.rewards[self.pos] = np.array(reward).copy()
        self.episode_starts[self.pos] = np.array(episode_start).copy()
        self.values[self.pos] = value.clone().cpu().numpy().flatten()
        self.log_probs[self.pos] = log_prob.clone().cpu().numpy()
        self.pos += 1
        if self.pos == self.buffer_size:
            self.full = True


class MlpExtractor(nn.Module):
    def __init__(self, feature_dim, net_arch=(8, 8)):
        super().__init__()
        policy_net, value_net = [], []
        last_pi, last_vf = feature_dim, feature_dim
        for units in net_arch:
            policy_net += [nn.Linear(last_pi, units), nn.Tanh()]
            value_net += [nn.Linear(last_vf, units), nn.Tanh()]
            last_pi = last_vf = units
        self.latent_dim_pi = last_pi
        self.latent_dim_vf = last_vf
        self.policy_net = nn.Sequential(*policy_net)
        self.value_net = nn.Sequential(*value_net)

    def forward(self, features):
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features):
        return self.policy_net(features)

    def forward_critic(self, features):
        return self.value_net(features)


class ActorCriticPolicy(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.features_extractor = nn.Flatten()
        self.share_features_extractor = True
        self.mlp_extractor = MlpExtractor(obs_dim)
        self.action_net = nn.Linear(self.mlp_extractor.latent_dim_pi, n_actions)
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, 1)

    def extract_features(self, obs):
        return self.features_extractor(obs.float())

    def forward(self, obs, deterministic=False):
        features = self.extract_features(obs)
        if self.share_features_extractor:
            latent_pi, latent_vf = self.mlp_extractor(features)
        else:
            pi_features, vf_features = features
            latent_pi = self.mlp_extractor.forward_actor(pi_features)
            latent_vf = self.mlp_extractor.forward_critic(vf_features)
        values = self.value_net(latent_vf)
        distribution = Categorical(logits=self.action_net(latent_pi))
        if deterministic:
            actions = th.argmax(distribution.probs, dim=1)
        else:
            actions = distribution.sample()
        log_prob = distribution.log_prob(actions)
        actions = actions.reshape((-1, 1))
        return actions, values, log_prob


class ReplayVecEnv:
    """Stand-in for the CartPole VecEnv: replays recorded transitions."""

    def __init__(self, observations, rewards, dones):
        self.observations = observations
        self.rewards = rewards
        self.dones = dones
        self.t = 0

    def step(self, actions):
        t = self.t % len(self.rewards)
        self.t += 1
        return self.observations[t + 1], self.rewards[t], self.dones[t], [{}]


def obs_as_tensor(obs, device):
    return th.as_tensor(obs, device=device)


class PPO:
    def __init__(self, n_steps=4, obs_dim=4, n_actions=2):
        self.n_steps = n_steps
        self.device = "cpu"
        self.policy = ActorCriticPolicy(obs_dim, n_actions)
        self.rollout_buffer = RolloutBuffer(n_steps, (obs_dim,), 1)
        self.num_timesteps = 0

    def collect_rollouts(self, env, rollout_buffer, n_rollout_steps, last_obs, last_episode_starts):
        self.policy.train(False)
        n_steps = 0
        rollout_buffer.reset()
        self._last_obs = last_obs
        self._last_episode_starts = last_episode_starts
        while n_steps < n_rollout_steps:
            with th.no_grad():
                # Convert to pytorch tensor or to TensorDict
                obs_tensor = obs_as_tensor(self._last_obs, self.device)
                actions, values, log_probs = self.policy(obs_tensor)
            actions = actions.cpu().numpy()

            # Rescale and perform action
            clipped_actions = actions
            new_obs, rewards, dones, infos = env.step(clipped_actions)

            self.num_timesteps += 1
            n_steps += 1

            rollout_buffer.add(self._last_obs, actions, rewards, self._last_episode_starts, values, log_probs)
            self._last_obs = new_obs
            self._last_episode_starts = dones
        return True


def collect(model, observations, rewards, dones):
    env = ReplayVecEnv(observations, rewards, dones)
    model.collect_rollouts(env, model.rollout_buffer, model.n_steps, observations[0], np.ones((1,), dtype=bool))
    return model.rollout_buffer.values.copy()


def train():
    model = PPO()
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((5, 1, 4)).astype(np.float32)
    rewards = np.ones((4, 1), dtype=np.float32)
    dones = np.array([[False], [False], [True], [False]])
    return th.compile(collect, backend="inductor")(model, obs, rewards, dones)


def make():
    th.manual_seed(0)
    model = PPO()
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((5, 1, 4)).astype(np.float32)
    rewards = np.ones((4, 1), dtype=np.float32)
    dones = np.array([[False], [False], [True], [False]])
    return collect, [(model, obs, rewards, dones)]
