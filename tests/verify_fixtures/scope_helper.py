"""A helper module the target imports: outside the target's default scope unless --scope-module names it."""


def double(x):
    return x * 2
