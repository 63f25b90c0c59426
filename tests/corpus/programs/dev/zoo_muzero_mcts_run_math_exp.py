"""MuZero MCTS.run: `torch.from_numpy(observation)`, `Node.expand` builds priors with `math.exp(policy_logits[0][a])`, each simulation calls `model.recurrent_inference` with `torch.tensor([[last_action]])` and backpropagates `value.item()` through Python tree nodes.

Source: werner-duvaud/muzero-general@065648374f93d28d9c2e0a3ef9925cf112182062:self_play.py:95-250
Also: models.py@065648374f93d28d9c2e0a3ef9925cf112182062 (FullyConnectedNetwork,
MuZeroNetwork with initial_inference/recurrent_inference).
Kept: MCTS.run, select_child, ucb_score, backpropagate, Node, MinMaxStats and the
network verbatim (next(model.parameters()).device, the one-hot scatter_).
Simplified: the compiled entry stands in for SelfPlay.play_game's
`MCTS(self.config).run(...)` call and reads the root visit counts as
store_search_statistics does; the config is a small class with the fields MCTS reads; 3 actions,
observation of 4 floats, 4 simulations.
"""
import math

import numpy
import torch


class FullyConnectedNetwork(torch.nn.Module):
    def __init__(
        self, input_size, layers_sizes, output_size, activation=torch.nn.Tanh()
    ):
        super(FullyConnectedNetwork, self).__init__()
        layers_sizes.insert(0, input_size)
        layers = []
        if 1 < len(layers_sizes):
            for i in range(len(layers_sizes) - 1):
                layers.extend(
                    [
                        torch.nn.Linear(layers_sizes[i], layers_sizes[i + 1]),
                        torch.nn.ReLU(),
                    ]
                )
        layers.append(torch.nn.Linear(layers_sizes[-1], output_size))
        if activation:
            layers.append(activation)
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# TODO: unified residual network
class MuZeroNetwork(torch.nn.Module):
    def __init__(self, observation_size, action_space_size, encoding_size, hidden_size):
        super().__init__()
        self.action_space_size = action_space_size

        self.representation_network = FullyConnectedNetwork(
            observation_size, [], encoding_size
        )

        self.dynamics_encoded_state_network = FullyConnectedNetwork(
            encoding_size + self.action_space_size, [hidden_size], encoding_size
        )
        self.dynamics_reward_network = FullyConnectedNetwork(
            encoding_size + self.action_space_size, [hidden_size], 1
        )

        self.prediction_policy_network = FullyConnectedNetwork(
            encoding_size, [], self.action_space_size, activation=None
        )
        self.prediction_value_network = FullyConnectedNetwork(
            encoding_size, [], 1, activation=None
        )

    def prediction(self, encoded_state):
        policy_logit = self.prediction_policy_network(encoded_state)
        value = self.prediction_value_network(encoded_state)
        return policy_logit, value

    def representation(self, observation):
        return self.representation_network(observation)

    def dynamics(self, encoded_state, action):
        action_one_hot = (
            torch.zeros((action.shape[0], self.action_space_size))
            .to(action.device)
            .float()
        )
        action_one_hot.scatter_(1, action.long(), 1.0)

        x = torch.cat((encoded_state, action_one_hot), dim=1)
        next_encoded_state = self.dynamics_encoded_state_network(x)
        reward = self.dynamics_reward_network(x)
        return next_encoded_state, reward

    def initial_inference(self, observation):
        encoded_state = self.representation(observation)
        policy_logit, value = self.prediction(encoded_state)
        return (
            value,
            torch.zeros(len(observation)).to(observation.device),
            policy_logit,
            encoded_state,
        )

    def recurrent_inference(self, encoded_state, action):
        next_encoded_state, reward = self.dynamics(encoded_state, action)
        policy_logit, value = self.prediction(next_encoded_state)
        return value, reward, policy_logit, next_encoded_state


# Game independant
class MCTS:
    """
    Core Monte Carlo Tree Search algorithm.
    To decide on an action, we run N simulations, always starting at the root of
    the search tree and traversing the tree according to the UCB formula until we
    reach a leaf node.
    """

    def __init__(self, config):
        self.config = config

    def run(self, model, observation, add_exploration_noise):
        """
        At the root of the search tree we use the representation function to obtain a hidden state given the current observation.
        We then run a Monte Carlo Tree Search using only action sequences and the model learned by the network.
        """
        root = Node(0)
        observation = (
            torch.from_numpy(observation)
            .float()
            .unsqueeze(0)
            .to(next(model.parameters()).device)
        )
        _, expected_reward, policy_logits, hidden_state = model.initial_inference(
            observation
        )
        root.expand(
            self.config.action_space, expected_reward, policy_logits, hidden_state
        )
        if add_exploration_noise:
            root.add_exploration_noise(
                dirichlet_alpha=self.config.root_dirichlet_alpha,
                exploration_fraction=self.config.root_exploration_fraction,
            )

        min_max_stats = MinMaxStats()

        for _ in range(self.config.num_simulations):
            node = root
            search_path = [node]

            while node.expanded():
                action, node = self.select_child(node, min_max_stats)
                last_action = action
                search_path.append(node)

            # Inside the search tree we use the dynamics function to obtain the next hidden state given an action and the previous hidden state
            parent = search_path[-2]
            value, reward, policy_logits, hidden_state = model.recurrent_inference(
                parent.hidden_state,
                torch.tensor([[last_action]]).to(parent.hidden_state.device),
            )
            node.expand(self.config.action_space, reward, policy_logits, hidden_state)

            self.backpropagate(search_path, value.item(), min_max_stats)

        return root

    def select_child(self, node, min_max_stats):
        """
        Select the child with the highest UCB score.
        """
        _, action, child = max(
            (self.ucb_score(node, child, min_max_stats), action, child)
            for action, child in node.children.items()
        )
        return action, child

    def ucb_score(self, parent, child, min_max_stats):
        """
        The score for a node is based on its value, plus an exploration bonus based on the prior.
        """
        pb_c = (
            math.log(
                (parent.visit_count + self.config.pb_c_base + 1) / self.config.pb_c_base
            )
            + self.config.pb_c_init
        )
        pb_c *= math.sqrt(parent.visit_count) / (child.visit_count + 1)

        prior_score = pb_c * child.prior
        value_score = min_max_stats.normalize(child.value())

        return prior_score + value_score

    def backpropagate(self, search_path, value, min_max_stats):
        """
        At the end of a simulation, we propagate the evaluation all the way up the tree to the root.
        """
        for node in search_path:
            # Always the same player, the other players minds should be modeled in network because environment do not act always in the best way to make you lose
            node.value_sum += value  # if node.to_play == to_play else -value
            node.visit_count += 1
            min_max_stats.update(node.value())

            value = node.reward + self.config.discount * value


class Node:
    def __init__(self, prior):
        self.visit_count = 0
        self.to_play = -1
        self.prior = prior
        self.value_sum = 0
        self.children = {}
        self.hidden_state = None
        self.reward = 0

    def expanded(self):
        return len(self.children) > 0

    def value(self):
        if self.visit_count == 0:
            return 0
        return self.value_sum / self.visit_count

    def expand(self, actions, reward, policy_logits, hidden_state):
        """
        We expand a node using the value, reward and policy prediction obtained from the neural network.
        """
        self.reward = reward
        self.hidden_state = hidden_state
        policy = {a: math.exp(policy_logits[0][a]) for a in actions}
        policy_sum = sum(policy.values())
        for action, p in policy.items():
            self.children[action] = Node(p / policy_sum)

    def add_exploration_noise(self, dirichlet_alpha, exploration_fraction):
        """
        At the start of each search, we add dirichlet noise to the prior of the root to encourage the search to explore new actions.
        """
        actions = list(self.children.keys())
        noise = numpy.random.dirichlet([dirichlet_alpha] * len(actions))
        frac = exploration_fraction
        for a, n in zip(actions, noise):
            self.children[a].prior = self.children[a].prior * (1 - frac) + n * frac


class MinMaxStats:
    """
    A class that holds the min-max values of the tree.
    """

    def __init__(self):
        self.maximum = -float("inf")
        self.minimum = float("inf")

    def update(self, value):
        self.maximum = max(self.maximum, value)
        self.minimum = min(self.minimum, value)

    def normalize(self, value):
        if self.maximum > self.minimum:
            # We normalize only when we have set the maximum and minimum values
            return (value - self.minimum) / (self.maximum - self.minimum)
        return value


class MuZeroConfig:
    def __init__(self):
        self.observation_shape = 4
        self.action_space = [i for i in range(3)]
        self.encoding_size = 8
        self.hidden_size = 16
        self.num_simulations = 4
        self.discount = 0.997
        self.root_dirichlet_alpha = 0.25
        self.root_exploration_fraction = 0.25
        self.pb_c_base = 19652
        self.pb_c_init = 1.25


def select_root_visits(model, observation, add_exploration_noise, config):
    root = MCTS(config).run(model, observation, add_exploration_noise)
    return [root.children[a].visit_count for a in config.action_space], root.value()


compiled_search = torch.compile(select_root_visits)


def make():
    torch.manual_seed(0)
    config = MuZeroConfig()
    model = MuZeroNetwork(config.observation_shape, len(config.action_space), config.encoding_size, config.hidden_size)
    model.eval()
    observation = numpy.array([0.1, -0.2, 0.3, 0.05], dtype=numpy.float32)
    return select_root_visits, [
        (model, observation, False, config),
        (model, observation, True, config),
    ]
