"""Reassigning `obj.__class__` inside a compiled function; Dynamo now breaks the graph there instead of answering `isinstance` wrongly.

Source: https://github.com/pytorch/pytorch/pull/174761 (fixes issue #174050, "torch.compile produce
inconsistent results when user overrides Python magic methods __class__")
Kept: the PR's regression test `test_class_reassignment_graph_break` (BaseClass / DerivedClass, `fn`
building a BaseClass, swapping its `__class__`, then `isinstance` and `hasattr` checks returned
beside `x + 1`) and its `torch.compile(fn, backend="eager")`.
Simplified: the two classes live at module level instead of inside the test method.
"""
import torch


class BaseClass:
    def __init__(self, x):
        self.x = x


class DerivedClass(BaseClass):
    def __init__(self, x):
        super().__init__(x)
        self.y = x * 2


def fn(x):
    obj = BaseClass(5)
    obj.__class__ = DerivedClass
    is_derived = isinstance(obj, DerivedClass)
    has_y = hasattr(obj, "y")
    return x + 1, is_derived, has_y


compiled_fn = torch.compile(fn, backend="eager")


def make():
    torch.manual_seed(0)
    return fn, [(torch.ones(1),)]
