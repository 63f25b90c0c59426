"""PyMARL BasicMAC.forward for policy logits: masked softmax plus epsilon floor over available actions.

Source: oxwhirl/pymarl@eaf6b063822e2bdf1992d72dc159a500f235dbc4:src/controllers/basic_controller.py:7-101
Also: src/modules/agents/rnn_agent.py (RNNAgent: fc1 -> GRUCell -> fc2) and
src/components/action_selectors.py (MultinomialActionSelector, its epsilon).
Kept: _build_inputs (obs, last action with the t == 0 branch, agent-id eye),
the recurrent hidden state stored on the controller, getattr(args,
"mask_before_softmax", True) plumbing, the -1e10 / 0.0 masked assignments and
the epsilon floor divided by the per-row count of available actions.
Simplified: EpisodeBatch is a small dict-backed stand-in exposing batch_size,
device and ["key"] lookup; 2 envs x 3 agents x 4 actions; fixed epsilon.
"""
from types import SimpleNamespace

import torch as th
import torch.nn as nn
import torch.nn.functional as F


class RNNAgent(nn.Module):
    def __init__(self, input_shape, args):
        super(RNNAgent, self).__init__()
        self.args = args

        self.fc1 = nn.Linear(input_shape, args.rnn_hidden_dim)
        self.rnn = nn.GRUCell(args.rnn_hidden_dim, args.rnn_hidden_dim)
        self.fc2 = nn.Linear(args.rnn_hidden_dim, args.n_actions)

    def init_hidden(self):
        # make hidden states on same device as model
        return self.fc1.weight.new(1, self.args.rnn_hidden_dim).zero_()

    def forward(self, inputs, hidden_state):
        x = F.relu(self.fc1(inputs))
        h_in = hidden_state.reshape(-1, self.args.rnn_hidden_dim)
        h = self.rnn(x, h_in)
        q = self.fc2(h)
        return q, h


agent_REGISTRY = {"rnn": RNNAgent}


class MultinomialActionSelector():

    def __init__(self, args):
        self.args = args
        self.epsilon = args.epsilon_start
        self.test_greedy = getattr(args, "test_greedy", True)


action_REGISTRY = {"multinomial": MultinomialActionSelector}


class EpisodeBatch:
    """Stand-in for components.episode_buffer.EpisodeBatch (dict-backed)."""

    def __init__(self, data, batch_size, max_seq_length, device="cpu"):
        self.data = data
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.device = device

    def __getitem__(self, item):
        if isinstance(item, str):
            return self.data[item]
        raise ValueError("only string keys in this stand-in")


# This multi-agent controller shares parameters between agents
class BasicMAC:
    def __init__(self, scheme, groups, args):
        self.n_agents = args.n_agents
        self.args = args
        input_shape = self._get_input_shape(scheme)
        self._build_agents(input_shape)
        self.agent_output_type = args.agent_output_type

        self.action_selector = action_REGISTRY[args.action_selector](args)

        self.hidden_states = None

    def forward(self, ep_batch, t, test_mode=False):
        agent_inputs = self._build_inputs(ep_batch, t)
        avail_actions = ep_batch["avail_actions"][:, t]
        agent_outs, self.hidden_states = self.agent(agent_inputs, self.hidden_states)

        # Softmax the agent outputs if they're policy logits
        if self.agent_output_type == "pi_logits":

            if getattr(self.args, "mask_before_softmax", True):
                # Make the logits for unavailable actions very negative to minimise their affect on the softmax
                reshaped_avail_actions = avail_actions.reshape(ep_batch.batch_size * self.n_agents, -1)
                agent_outs[reshaped_avail_actions == 0] = -1e10

            agent_outs = th.nn.functional.softmax(agent_outs, dim=-1)
            if not test_mode:
                # Epsilon floor
                epsilon_action_num = agent_outs.size(-1)
                if getattr(self.args, "mask_before_softmax", True):
                    # With probability epsilon, we will pick an available action uniformly
                    epsilon_action_num = reshaped_avail_actions.sum(dim=1, keepdim=True).float()

                agent_outs = ((1 - self.action_selector.epsilon) * agent_outs
                              + th.ones_like(agent_outs) * self.action_selector.epsilon/epsilon_action_num)

                if getattr(self.args, "mask_before_softmax", True):
                    # Zero out the unavailable actions
                    agent_outs[reshaped_avail_actions == 0] = 0.0

        return agent_outs.view(ep_batch.batch_size, self.n_agents, -1)

    def init_hidden(self, batch_size):
        self.hidden_states = self.agent.init_hidden().unsqueeze(0).expand(batch_size, self.n_agents, -1)  # bav

    def parameters(self):
        return self.agent.parameters()

    def _build_agents(self, input_shape):
        self.agent = agent_REGISTRY[self.args.agent](input_shape, self.args)

    def _build_inputs(self, batch, t):
        # Assumes homogenous agents with flat observations.
        # Other MACs might want to e.g. delegate building inputs to each agent
        bs = batch.batch_size
        inputs = []
        inputs.append(batch["obs"][:, t])  # b1av
        if self.args.obs_last_action:
            if t == 0:
                inputs.append(th.zeros_like(batch["actions_onehot"][:, t]))
            else:
                inputs.append(batch["actions_onehot"][:, t-1])
        if self.args.obs_agent_id:
            inputs.append(th.eye(self.n_agents, device=batch.device).unsqueeze(0).expand(bs, -1, -1))

        inputs = th.cat([x.reshape(bs*self.n_agents, -1) for x in inputs], dim=1)
        return inputs

    def _get_input_shape(self, scheme):
        input_shape = scheme["obs"]["vshape"]
        if self.args.obs_last_action:
            input_shape += scheme["actions_onehot"]["vshape"][0]
        if self.args.obs_agent_id:
            input_shape += self.n_agents

        return input_shape


def make_args():
    return SimpleNamespace(n_agents=3, n_actions=4, rnn_hidden_dim=8, agent="rnn",
                           agent_output_type="pi_logits", action_selector="multinomial",
                           obs_last_action=True, obs_agent_id=True, mask_before_softmax=True,
                           epsilon_start=0.5)


def make_batch():
    bs, T, n_agents, n_actions, obs = 2, 4, 3, 4, 6
    avail = th.ones(bs, T, n_agents, n_actions)
    avail[0, :, 0, 3] = 0
    avail[1, 2, 1, :2] = 0
    actions = th.randint(0, n_actions, (bs, T, n_agents))
    data = {
        "obs": th.randn(bs, T, n_agents, obs),
        "avail_actions": avail,
        "actions_onehot": F.one_hot(actions, n_actions).float(),
    }
    return EpisodeBatch(data, bs, T)


def build(args):
    scheme = {"obs": {"vshape": 6}, "actions_onehot": {"vshape": (args.n_actions,)}}
    mac = BasicMAC(scheme, None, args)
    mac.init_hidden(2)
    return mac


mac_forward = None


def main():
    global mac_forward
    mac = build(make_args())
    mac_forward = th.compile(mac.forward)
    return mac_forward


def make():
    th.manual_seed(0)
    mac = build(make_args())
    batch = make_batch()
    return mac.forward, [(batch, 0, False), (batch, 2, False), (batch, 3, True)]
