"""SAC-Discrete actor loss: the actor's softmax output builds a torch.distributions.Categorical, an action is sampled and moved to CPU, zero probabilities get a 1e-8 guard, and the entropy-regularized policy loss is taken against the min of two critics.

Source: p-christ/Deep-Reinforcement-Learning-Algorithms-with-PyTorch@039ea221fafdeea2e060665c4ad572e3c1edd981:agents/actor_critic_agents/SAC_Discrete.py:46-98 (with utilities/Utility_Functions.py:create_actor_distribution at 9b0fcd9bb89e636b9b81be0e6ce192906a99d3fc)
Kept: produce_action_and_action_info (argmax().unsqueeze(0), the
create_actor_distribution call, sample().cpu(), the `== 0.0` guard),
calculate_actor_loss unchanged, create_actor_distribution with both its
DISCRETE (Categorical) and continuous (Normal, shape checks, ValueError)
branches, and the hyperparameter-dict / alpha plumbing of __init__
(automatic entropy tuning with log_alpha.exp()).
Simplified: Base_Agent / nn_builder's create_NN are small stand-ins (an MLP
with a Softmax head for the actor); replay buffer and optimizers' use in
learn() dropped; state size 4, 3 actions, hidden 8.
"""
import torch
from torch import nn
from torch.optim import Adam
import torch.nn.functional as F
import numpy as np
from torch.distributions import Categorical, normal


def create_actor_distribution(action_types, actor_output, action_size):
    """Creates a distribution that the actor can then use to randomly draw actions"""
    if action_types == "DISCRETE":
        assert actor_output.size()[1] == action_size, "Actor output the wrong size"
        action_distribution = Categorical(actor_output)  # this creates a distribution to sample from
    else:
        assert actor_output.size()[1] == action_size * 2, "Actor output the wrong size"
        means = actor_output[:, :action_size].squeeze(0)
        stds = actor_output[:,  action_size:].squeeze(0)
        if len(means.shape) == 2: means = means.squeeze(-1)
        if len(stds.shape) == 2: stds = stds.squeeze(-1)
        if len(stds.shape) > 1 or len(means.shape) > 1:
            raise ValueError("Wrong mean and std shapes - {} -- {}".format(stds.shape, means.shape))
        action_distribution = normal.Normal(means.squeeze(0), torch.abs(stds))
    return action_distribution


class Config:
    seed = 1
    hyperparameters = {
        "Actor": {"learning_rate": 3e-4, "final_layer_activation": "Softmax", "linear_hidden_units": [8]},
        "Critic": {"learning_rate": 3e-4, "final_layer_activation": None, "linear_hidden_units": [8],
                   "buffer_size": 100},
        "batch_size": 4,
        "discount_rate": 0.99,
        "automatically_tune_entropy_hyperparameter": True,
        "entropy_term_weight": None,
        "add_extra_noise": False,
        "do_evaluation_iterations": True,
    }


class Base_Agent(object):
    """Stand-in for agents/Base_Agent.py: sizes, device and create_NN."""

    def __init__(self, config):
        self.config = config
        self.action_types = "DISCRETE"
        self.state_size = 4
        self.action_size = 3
        self.device = "cpu"

    def create_NN(self, input_dim, output_dim, key_to_use=None, override_seed=None, hyperparameters=None):
        if hyperparameters is None: hyperparameters = self.hyperparameters
        if key_to_use: hyperparameters = hyperparameters[key_to_use]
        hidden = hyperparameters["linear_hidden_units"][0]
        layers = [nn.Linear(input_dim, hidden), nn.ReLU(), nn.Linear(hidden, output_dim)]
        if hyperparameters["final_layer_activation"] == "Softmax":
            layers.append(nn.Softmax(dim=1))
        return nn.Sequential(*layers)

    @staticmethod
    def copy_model_over(from_model, to_model):
        for to_model, from_model in zip(to_model.parameters(), from_model.parameters()):
            to_model.data.copy_(from_model.data.clone())


class SAC_Discrete(Base_Agent):
    """The Soft Actor Critic for discrete actions."""
    agent_name = "SAC"
    def __init__(self, config):
        Base_Agent.__init__(self, config)
        assert self.action_types == "DISCRETE", "Action types must be discrete. Use SAC instead for continuous actions"
        assert self.config.hyperparameters["Actor"]["final_layer_activation"] == "Softmax", "Final actor layer must be softmax"
        self.hyperparameters = config.hyperparameters
        self.critic_local = self.create_NN(input_dim=self.state_size, output_dim=self.action_size, key_to_use="Critic")
        self.critic_local_2 = self.create_NN(input_dim=self.state_size, output_dim=self.action_size,
                                           key_to_use="Critic", override_seed=self.config.seed + 1)
        self.critic_optimizer = torch.optim.Adam(self.critic_local.parameters(),
                                                 lr=self.hyperparameters["Critic"]["learning_rate"])
        self.critic_optimizer_2 = torch.optim.Adam(self.critic_local_2.parameters(),
                                                   lr=self.hyperparameters["Critic"]["learning_rate"])
        self.critic_target = self.create_NN(input_dim=self.state_size, output_dim=self.action_size,
                                           key_to_use="Critic")
        self.critic_target_2 = self.create_NN(input_dim=self.state_size, output_dim=self.action_size,
                                            key_to_use="Critic")
        Base_Agent.copy_model_over(self.critic_local, self.critic_target)
        Base_Agent.copy_model_over(self.critic_local_2, self.critic_target_2)

        self.actor_local = self.create_NN(input_dim=self.state_size, output_dim=self.action_size, key_to_use="Actor")
        self.actor_optimizer = torch.optim.Adam(self.actor_local.parameters(),
                                          lr=self.hyperparameters["Actor"]["learning_rate"])
        self.automatic_entropy_tuning = self.hyperparameters["automatically_tune_entropy_hyperparameter"]
        if self.automatic_entropy_tuning:
            # we set the max possible entropy as the target entropy
            self.target_entropy = -np.log((1.0 / self.action_size)) * 0.98
            self.log_alpha = torch.zeros(1, requires_grad=True, device=self.device)
            self.alpha = self.log_alpha.exp()
            self.alpha_optim = Adam([self.log_alpha], lr=self.hyperparameters["Actor"]["learning_rate"])
        else:
            self.alpha = self.hyperparameters["entropy_term_weight"]
        assert not self.hyperparameters["add_extra_noise"], "There is no add extra noise option for the discrete version of SAC at moment"
        self.add_extra_noise = False
        self.do_evaluation_iterations = self.hyperparameters["do_evaluation_iterations"]

    def produce_action_and_action_info(self, state):
        """Given the state, produces an action, the probability of the action, the log probability of the action, and
        the argmax action"""
        action_probabilities = self.actor_local(state)
        max_probability_action = torch.argmax(action_probabilities).unsqueeze(0)
        action_distribution = create_actor_distribution(self.action_types, action_probabilities, self.action_size)
        action = action_distribution.sample().cpu()
        # Have to deal with situation of 0.0 probabilities because we can't do log 0
        z = action_probabilities == 0.0
        z = z.float() * 1e-8
        log_action_probabilities = torch.log(action_probabilities + z)
        return action, (action_probabilities, log_action_probabilities), max_probability_action

    def calculate_actor_loss(self, state_batch):
        """Calculates the loss for the actor. This loss includes the additional entropy term"""
        action, (action_probabilities, log_action_probabilities), _ = self.produce_action_and_action_info(state_batch)
        qf1_pi = self.critic_local(state_batch)
        qf2_pi = self.critic_local_2(state_batch)
        min_qf_pi = torch.min(qf1_pi, qf2_pi)
        inside_term = self.alpha * log_action_probabilities - min_qf_pi
        policy_loss = action_probabilities * inside_term
        policy_loss = policy_loss.mean()
        log_action_probabilities = torch.sum(log_action_probabilities * action_probabilities, dim=1)
        return policy_loss, log_action_probabilities


def build_agent():
    agent = SAC_Discrete(Config())
    agent.calculate_actor_loss = torch.compile(agent.calculate_actor_loss)
    return agent


def make():
    torch.manual_seed(0)
    agent = SAC_Discrete(Config())
    state_batch = torch.randn(4, 4)
    return agent.calculate_actor_loss, [(state_batch,)]
