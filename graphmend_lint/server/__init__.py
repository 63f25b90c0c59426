"""``graphmend-lint server``: the linter as a language server, over stdio.

The server is an adapter, not a second linter: each request runs the same
:func:`graphmend_lint.pipeline.analyze` and :func:`graphmend_lint.pipeline.fix`
the command line runs, with settings resolved for the document's path as the
command line resolves them. Only :mod:`.app` talks to pygls, which is the
optional ``server`` extra; the other modules translate between graphmend-lint's
positions, findings and fixes and the protocol's.
"""
