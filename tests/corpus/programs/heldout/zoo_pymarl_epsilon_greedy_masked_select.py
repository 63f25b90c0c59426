"""PyMARL epsilon-greedy action selector: schedule lookup, -inf masking, Categorical sample.

Source: oxwhirl/pymarl@76286f588589995b17d5895068dd083522d44b52:src/components/action_selectors.py:35-65
Also: src/components/epsilon_schedules.py:1-32 (DecayThenFlatSchedule, commit ca57703c).
Kept: the schedule's Python max/min eval on t_env (with delay), test_mode forcing
epsilon to 0.0, masked assignment of -inf on unavailable actions, th.rand_like
coin flips, Categorical(avail_actions.float()).sample(), and the blended pick.
Simplified: 2 envs x 3 agents x 5 actions; an args namespace instead of sacred config.
"""
from types import SimpleNamespace

import numpy as np
import torch as th
from torch.distributions import Categorical


class DecayThenFlatSchedule():

    def __init__(self,
                 start,
                 finish,
                 time_length,
                 delay=0,
                 decay="exp"):

        self.start = start
        self.finish = finish
        self.time_length = time_length
        self.delay = delay
        self.delta = (self.start - self.finish) / self.time_length
        self.decay = decay

        if self.decay in ["exp"]:
            self.exp_scaling = (-1) * self.time_length / np.log(self.finish) if self.finish > 0 else 1

    def eval(self, T):

        T = max(0, T - self.delay)

        if self.decay in ["linear"]:
            return max(self.finish, self.start - self.delta * T)
        elif self.decay in ["exp"]:
            return min(self.start, max(self.finish, np.exp(- T / self.exp_scaling)))
    pass


class EpsilonGreedyActionSelector():

    def __init__(self, args):
        self.args = args

        self.schedule = DecayThenFlatSchedule(args.epsilon_start, args.epsilon_finish, args.epsilon_anneal_time,
                                              args.epsilon_delay, decay="linear")
        self.epsilon = self.schedule.eval(0)

    def select_action(self, agent_inputs, avail_actions, t_env, test_mode=False):

        # Assuming agent_inputs is a batch of Q-Values for each agent bav
        self.epsilon = self.schedule.eval(t_env)

        if test_mode:
            # Greedy action selection only
            self.epsilon = 0.0

        # mask actions that are excluded from selection
        masked_q_values = agent_inputs.clone()
        masked_q_values[avail_actions == 0.0] = -float("inf")  # should never be selected!

        random_numbers = th.rand_like(agent_inputs[:, :, 0])
        pick_random = (random_numbers < self.epsilon).long()
        random_actions = Categorical(avail_actions.float()).sample().long()

        picked_actions = pick_random * random_actions + (1 - pick_random) * masked_q_values.max(dim=2)[1]
        return picked_actions


REGISTRY = {}
REGISTRY["epsilon_greedy"] = EpsilonGreedyActionSelector


def make_args():
    return SimpleNamespace(action_selector="epsilon_greedy", epsilon_start=1.0, epsilon_finish=0.05,
                           epsilon_anneal_time=50000, epsilon_delay=0)


def runner_setup(args):
    selector = REGISTRY[args.action_selector](args)
    selector.select_action = th.compile(selector.select_action)
    return selector


def make():
    th.manual_seed(0)
    selector = REGISTRY["epsilon_greedy"](make_args())
    q = th.randn(2, 3, 5)
    avail = th.ones(2, 3, 5)
    avail[0, 1, 2:] = 0.0
    avail[1, 2, :3] = 0.0
    return selector.select_action, [
        (q, avail, 0, False),
        (q, avail, 20000, False),
        (q, avail, 120000, True),
    ]
