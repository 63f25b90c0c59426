"""``python -m graphmend_lint`` runs the command line."""

from graphmend_lint.cli import main

raise SystemExit(main())
