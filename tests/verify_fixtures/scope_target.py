"""A target whose module calls into ``scope_helper``."""

import torch

import scope_helper


def step(x):
    return scope_helper.double(x) + 1


def factory():
    return step, (torch.ones(3),)
