"""A corpus of programs translated from real code, and the harness that measures the linter on it.

Truth is what Dynamo logs when the programs run; see ``README.md`` here for the
program format and ``docs/corpus.md`` for the scoring.
"""
