"""The hand-written part of ``docs/cli.md``: how to adopt the linter on existing code.

The rest of that page is built from the parser; this guide is prose with
examples, so it lives here, next to the generator, and its ``example-run``
blocks are real runs filled in by :mod:`graphmend_lint.docs_examples` like
those of the other pages. ``tests/test_cli_adoption.py`` checks that the
``baseline.json`` shown is what ``--write-baseline`` writes for ``train.py``
without its lines marked ``# added later``.
"""

from __future__ import annotations

ADDED_LATER = "# added later"

ADOPTION_GUIDE = f"""## Adopting on existing code

A code base with hundreds of findings can adopt graphmend-lint today and fix
them over time: either mark every current finding with `# noqa`, or keep them
in a baseline file. Either way only new findings are reported and fail CI.

### `--add-noqa`

`--add-noqa` adds `# noqa: CODE` to every line with a finding, as
`ruff --add-noqa` does. The directive goes on the line the `# noqa` matcher
reads, the first line of the finding (where Dynamo logs the break); codes are
merged into an existing `# noqa: ...` directive and appended after any other
comment; nothing else in the file changes (encoding, line endings,
permissions, symlinks and hard links are kept as `--fix` keeps them). A second
run adds nothing. A line that ends inside a multi-line string or with a
backslash cannot take a comment: its findings are reported and left alone,
and the exit code is 1.

<!-- example-file: model.py -->
```python
import torch


@torch.compile
def step(x):
    y = x * 2
    print("y:", y.data)  # noqa: E501
    if y.sum() > 0:
        y = y + 1
    return y
```

`--diff` shows what would be added, and writes nothing:

<!-- example-run: graphmend-lint --add-noqa --diff model.py -->
```diff
```

<!-- example-run: graphmend-lint --add-noqa model.py -->
```console
```

### `--write-baseline` and `--baseline`

`--write-baseline FILE` stores every current finding in a JSON file;
`--baseline FILE` then reports, and counts for the exit code, only findings
that are not in it. The source stays untouched, and fixing a baselined finding
needs no edit of the baseline (rewrite it now and then to drop what was fixed).

<!-- example-file: train.py -->
```python
import torch


@torch.compile
def train_step(model, batch):
    batch = batch.float()  {ADDED_LATER}
    loss = model(batch).mean()
    print("loss", loss)
    if loss > 10:  {ADDED_LATER}
        loss = loss / 10  {ADDED_LATER}
    return loss
```

`baseline.json`, written by `graphmend-lint --write-baseline baseline.json
train.py` before the lines marked `{ADDED_LATER}`:

<!-- example-file: baseline.json -->
```json
{{
  "graphmend-lint-baseline": 1,
  "findings": [
    {{"path": "train.py", "code": "GM201", "source": "print(\\"loss\\", loss)", "occurrence": 0}}
  ]
}}
```

The print moved down a line and is still known; the new branch is reported:

<!-- example-run: graphmend-lint --baseline baseline.json train.py -->
```console
```

A finding is keyed by its file (relative to the project root, the folder of
the config file), its code, the text of its first line without comment and
with blanks collapsed, and its index among the file's findings with the same
code and text. Line numbers are not part of the key, so inserting or deleting
lines, re-indenting or adding a comment keeps a finding known; editing the
flagged line makes it new. The rule's message is not part of the key either,
so a reworded message in a new release does not turn the baseline into new
findings. Syntax errors are never stored. `--write-baseline` exits 0 once the
file is written (1 when some path could not be checked). A baseline that cannot be read, is
not JSON or is not a graphmend-lint baseline is an error (exit 2) that names
the file. `--add-noqa` and `--write-baseline` combine with no other mode
(`--fix`, `--verify`, standard input, each other).
"""
