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


PRINT = '    print("z", z.shape)  # BREAK GM201\n    return z * 3\n'


def predicate_and_defer(source: str, filename: str) -> str:
    """The branch predicated, and GM201's old epilogue deferral: the print moves after the last tensor op.

    Dynamo still logs the print's break there (GB0059) although no graph splits at it.
    """
    return predicate(source, filename).replace(PRINT, '    shape = z.shape\n    result = z * 3\n    print("z", shape)\n    return result\n')


def predicate_and_guard(source: str, filename: str) -> str:
    """Both breaks removed: the branch predicated, the print skipped while compiling."""
    guarded = '    if not torch.compiler.is_compiling():\n        print("z", z.shape)\n    return z * 3\n'
    return predicate(source, filename).replace(PRINT, guarded)
