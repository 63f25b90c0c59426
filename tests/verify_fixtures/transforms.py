"""Hand-written rewrites of ``branch.py``, so tests of the fixed arm do not depend on which fixes exist."""

BRANCH = """    if y.sum() > 0:  # BREAK GM101
        z = y + 1
    else:
        z = y - 1
"""


def predicate(source: str, filename: str) -> str:
    """The predication fix done by hand: both branches computed, torch.where picks."""
    return source.replace(BRANCH, "    z = torch.where(y.sum() > 0, y + 1, y - 1)\n\n\n\n")


def wrong(source: str, filename: str) -> str:
    """A "fix" that changes what the function computes: the else branch is lost."""
    return source.replace(BRANCH, "    z = y + 1\n\n\n\n")
