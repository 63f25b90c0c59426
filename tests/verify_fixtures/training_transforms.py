"""Hand-written rewrites of ``training_branch.py`` for the train-mode tests (picklable: module level)."""

BRANCH = """        if self.training and torch.rand([]) < self.layerdrop:
            return x
        return self.second(x) + x
"""


def predicate_layerdrop(source: str, filename: str) -> str:
    """The same RNG draw, the branch as a select: no break, equal outputs and gradients."""
    return source.replace(BRANCH, """        skip = torch.rand([]) < self.layerdrop if self.training else torch.tensor(False)
        return torch.where(skip, x, self.second(x) + x)
""")


def detach_the_skip_path(source: str, filename: str) -> str:
    """Equal outputs, but no gradient reaches ``first`` through the layer: only the gradient check sees it."""
    return source.replace("        return self.second(x) + x\n", "        return self.second(x) + x.detach()\n")
