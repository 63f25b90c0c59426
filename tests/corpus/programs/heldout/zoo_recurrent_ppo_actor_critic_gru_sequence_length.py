"""Recurrent PPO actor-critic: `forward` converts numpy observations with `torch.tensor(obs, ...)`, runs a GRU on one step or on `sequence_length`-long chunks (Python-int branch), and returns a `Categorical` policy.

Source: MarcoMeter/recurrent-ppo-truncated-bptt@04d9d11a50bff197adaf9d6ca704e08652000708:model.py:7-165
Kept: ActorCriticModel.__init__ (config dict plumbing, recurrent layer choice,
orthogonal init, init_weights via apply), forward, get_conv_output and
init_recurrent_cell_states verbatim.
Simplified: gym's Box is a local stand-in with a `shape`; vector observations
of size 5, hidden sizes 8; trainer/buffer code dropped.
"""
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical
from torch.nn import functional as F


class Box:
    def __init__(self, shape):
        self.shape = shape


class ActorCriticModel(nn.Module):
    def __init__(self, config, observation_space, action_space_shape):
        super().__init__()
        self.hidden_size = config["hidden_layer_size"]
        self.recurrence = config["recurrence"]
        self.observation_space_shape = observation_space.shape
        self.action_space_shape = action_space_shape

        # Observation encoder
        if len(self.observation_space_shape) > 1:
            # Case: visual observation is available
            # Visual encoder made of 3 convolutional layers
            self.encoder = nn.Sequential(
                nn.Conv2d(observation_space.shape[0], 32, 8, 4,),
                nn.ReLU(),
                nn.Conv2d(32, 64, 4, 2, 0),
                nn.ReLU(),
                nn.Conv2d(64, 64, 3, 1, 0),
                nn.Flatten()
            )

            # Compute output size of convolutional layers
            self.conv_out_size = self.get_conv_output(observation_space.shape)

            in_features_next_layer = self.conv_out_size
        else:
            # Case: vector observation is available
            in_features_next_layer = observation_space.shape[0]

        # Recurrent Layer (GRU or LSTM)
        if self.recurrence["layer_type"] == "gru":
            self.recurrent_layer = nn.GRU(in_features_next_layer, self.recurrence["hidden_state_size"], batch_first=True)
        elif self.recurrence["layer_type"] == "lstm":
            self.recurrent_layer = nn.LSTM(in_features_next_layer, self.recurrence["hidden_state_size"], batch_first=True)
        # Init recurrent layer
        for name, param in self.recurrent_layer.named_parameters():
            if "bias" in name:
                nn.init.constant_(param, 0)
            elif "weight" in name:
                nn.init.orthogonal_(param, np.sqrt(2))

        # Hidden layer
        self.lin_hidden = nn.Linear(self.recurrence["hidden_state_size"], self.hidden_size)

        # Outputs / Model Heads
        # Policy
        self.policy = nn.Sequential(
            nn.Linear(self.hidden_size, self.hidden_size),
            nn.ReLU(),
            nn.Linear(self.hidden_size, self.action_space_shape[0])
        )

        # Value Function
        self.value = nn.Sequential(
            nn.Linear(self.hidden_size, self.hidden_size),
            nn.ReLU(),
            nn.Linear(self.hidden_size, 1)
        )

        # init weights
        self.apply(self.init_weights)

    @torch.no_grad()
    def init_weights(self, m):
        if isinstance(m, nn.Linear) and m.out_features == 1: # init weights of value head
            nn.init.orthogonal_(m.weight, 1)
        elif isinstance(m, nn.Conv2d) and m.out_features == self.action_space_shape[0]: # init weights of policy head
            nn.init.orthogonal_(m.weight, np.sqrt(0.01))
        elif isinstance(m, nn.Conv2d) or isinstance(m, nn.Linear):
            nn.init.orthogonal_(m.weight, np.sqrt(2))

    def forward(self, obs:np.ndarray, recurrent_cell:torch.tensor, device:torch.device, sequence_length:int=1):
        # Forward observation encoder
        if len(self.observation_space_shape) > 1:
            vis_obs = torch.tensor(obs, dtype=torch.float32, device=device)     # Convert vis_obs to tensor
            # Propagate input through the visual encoder
            h = self.encoder(vis_obs)
        else:
            h = torch.tensor(obs, dtype=torch.float32, device=device)           # Convert vec_obs to tensor

        # Forward reccurent layer (GRU or LSTM)
        if sequence_length == 1:
            # Case: sampling training data or model optimization using sequence length == 1
            h, recurrent_cell = self.recurrent_layer(h.unsqueeze(1), recurrent_cell)
            h = h.squeeze(1) # Remove sequence length dimension
        else:
            # Case: Model optimization given a sequence length > 1
            # Reshape the to be fed data to batch_size, sequence_length, data
            h_shape = tuple(h.size())
            h = h.reshape((h_shape[0] // sequence_length), sequence_length, h_shape[1])

            # Forward recurrent layer
            h, recurrent_cell = self.recurrent_layer(h, recurrent_cell)

            # Reshape to the original tensor size
            h_shape = tuple(h.size())
            h = h.reshape(h_shape[0] * h_shape[1], h_shape[2])

        # Activation of the recurrent layer
        h = F.relu(h)

        # Feed hidden layer
        h = F.relu(self.lin_hidden(h))

        # Head: Value Function
        value = self.value(h).reshape(-1)
        # Head: Policy
        pi = Categorical(logits=self.policy(h))

        return pi, value, recurrent_cell

    def get_conv_output(self, shape:tuple):
        o = self.encoder(torch.zeros(1, *shape))
        return int(o.size()[1])

    def init_recurrent_cell_states(self, num_sequences:int, device:torch.device):
        hxs = torch.zeros((num_sequences), self.recurrence["hidden_state_size"], dtype=torch.float32, device=device).unsqueeze(0)
        cxs = None
        if self.recurrence["layer_type"] == "lstm":
            cxs = torch.zeros((num_sequences), self.recurrence["hidden_state_size"], dtype=torch.float32, device=device).unsqueeze(0)
        return hxs, cxs


CONFIG = {
    "hidden_layer_size": 8,
    "recurrence": {"layer_type": "gru", "sequence_length": 4, "hidden_state_size": 8},
}


def build_model(device):
    model = ActorCriticModel(CONFIG, Box((5,)), (3,))
    model.to(device)
    model.train()
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    device = torch.device("cpu")
    model = ActorCriticModel(CONFIG, Box((5,)), (3,))
    rng = np.random.RandomState(0)
    hxs, _ = model.init_recurrent_cell_states(2, device)
    step_obs = rng.randn(2, 5).astype(np.float32)
    seq_obs = rng.randn(8, 5).astype(np.float32)
    return model, [(step_obs, hxs, device, 1), (seq_obs, hxs, device, 4)]
