"""``graphmend-lint server``: start the language server on stdin/stdout.

pygls is an optional extra, so a missing install is a usage problem with a
clear remedy (exit 2), not a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

EXIT_CLEAN, EXIT_ERROR = 0, 2
INSTALL_HINT = "pip install 'graphmend-lint[server]'"


def build_parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="graphmend-lint server",
        description="Run graphmend-lint as a language server (LSP over stdin/stdout) for editors: diagnostics "
        "on open, change and save, the rule's explanation on hover, and code actions for fixes. See docs/server.md.",
    )


def pygls_available() -> bool:
    """Whether the optional ``server`` extra is installed (and importable: a broken install counts as missing)."""
    try:
        importlib.import_module("pygls.lsp.server")
        importlib.import_module("lsprotocol.types")
    except ImportError:
        return False
    return True


def main(argv: Sequence[str]) -> int:
    build_parser().parse_args(argv)
    if not pygls_available():
        print(
            f"graphmend-lint: error: the language server needs pygls, which is not installed; install it with: {INSTALL_HINT}",
            file=sys.stderr,
        )
        return EXIT_ERROR
    from graphmend_lint.server.app import serve

    serve()
    return EXIT_CLEAN
