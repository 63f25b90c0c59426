"""Verify side of graphmend-lint: runs real torch Dynamo to check what the static rules predict.

One job per module (see ``docs/verify.md``):

* ``targets``: parse TARGET strings, default scopes, build workloads from factories;
* ``hf``: the built-in Hugging Face adapter (tiny random models, dummy inputs);
* ``hook``: the import hook that fixes scope modules in memory, and the transforms;
* ``static``: the linter's side (fix and lint with the target seeded as compiled);
* ``breaks``: measure real Dynamo breaks (splitting and logged sites, skipped frames);
* ``compare``: flatten outputs and compare them;
* ``bench``: cold start, steady state and eager timings behind a ``Timer``;
* ``environment``: machine, device and versions;
* ``arm``: one arm in a fresh subprocess; ``runner``: both arms of a target;
* ``reconcile``: pair runtime breaks with static findings;
* ``results``, ``report``, ``plot``: result objects and their renderings;
* ``cli``: ``graphmend-lint verify``; ``rollback``: ``--fix --verify``;
* the break gate (``--baseline``): ``recompiles`` counts recompilations,
  ``attribution`` tells first-party from third-party files, ``baseline`` keys
  and stores sites, ``gate`` measures the original code, ``gate_report``
  renders text, JSON, GitHub annotations and SARIF.

Only ``arm`` (in its subprocess) and the modules it calls import torch; the
parent process of ``graphmend-lint verify`` never does.
"""
