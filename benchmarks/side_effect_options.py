"""Which ways of keeping a print or log call remove the graph break Dynamo logs (issue 13 §1).

Each option is one small function: ``y = x * 2``, the side effect, more tensor
work. For each it reports, on the installed torch:

* the break sites Dynamo *logs* (the ``graph_breaks`` artifact, through
  ``graphmend_lint.verify.breaks``), which is what counts as a break;
* whether ``torch.compile(fn, fullgraph=True)`` runs (``aot_eager`` backend);
* what the compiled call printed or logged, and the eager call.

Every option runs in its own fresh interpreter, so Dynamo settings one option
changes (``reorderable_logging_functions``) cannot leak into the next.

    python benchmarks/side_effect_options.py            # markdown table
    python benchmarks/side_effect_options.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

#: name -> (setup run once before compiling, function body after ``y = x * 2``, ending in a return)
OPTIONS: dict[str, tuple[str, str]] = {
    "print in the middle": ("", "print('y', y)\nreturn y.relu()"),
    "print after the last tensor op": ("", "z = y.relu()\nprint('y', y)\nreturn z"),
    "torch._higher_order_ops.print": ("", "torch._higher_order_ops.print('y {!s}', y)\nreturn y.relu()"),
    "reorderable print(tensor)": (
        "torch._dynamo.config.reorderable_logging_functions.add(print)",
        "print('y', y)\nreturn y.relu()",
    ),
    "reorderable print(y.shape)": (
        "torch._dynamo.config.reorderable_logging_functions.add(print)",
        "print('y', y.shape)\nreturn y.relu()",
    ),
    "guarded print": ("", "if not torch.compiler.is_compiling():\n    print('y', y)\nreturn y.relu()"),
    "logger.warning": ("", "logger.warning('y %s', y.shape)\nreturn y.relu()"),
    "reorderable logger.warning": (
        "torch._dynamo.config.reorderable_logging_functions.add(logger.warning)",
        "logger.warning('y %s', y.shape)\nreturn y.relu()",
    ),
    "ignore_logger_methods": (
        "torch._dynamo.config.ignore_logger_methods = {logger.warning}",
        "logger.warning('y %s', y.shape)\nreturn y.relu()",
    ),
    "guarded logger.warning": (
        "",
        "if not torch.compiler.is_compiling():\n    logger.warning('y %s', y.shape)\nreturn y.relu()",
    ),
    "warnings.warn": ("", "warnings.warn('y')\nreturn y.relu()"),
    "guarded warnings.warn": ("", "if not torch.compiler.is_compiling():\n    warnings.warn('y')\nreturn y.relu()"),
    "append to an outer list": ("", "BUFFER.append(y.sum())\nreturn y.relu()"),
}

_PROBE = '''
import contextlib, io, json, logging, sys, warnings
import torch
from graphmend_lint.verify.breaks import capture_breaks

logger = logging.getLogger("probe")
logging.basicConfig(stream=sys.stderr, format="LOG:%(message)s", force=True)
BUFFER = []

def fn(x):
    y = x * 2
{body}

{setup}

def run(call):
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    logger.addHandler(handler)
    with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    logger.removeHandler(handler)
    return out.getvalue() + err.getvalue() + "".join(f"warning: {{w.message}}\\n" for w in caught)

x = torch.arange(4.0)
eager = run(lambda: fn(x))
with contextlib.redirect_stdout(io.StringIO()):
    report = capture_breaks(fn, x)
torch._dynamo.reset()
BUFFER.clear()
try:
    compiled_text = run(lambda: torch.compile(fn, fullgraph=True, backend="aot_eager")(x))
    fullgraph = True
except Exception as error:
    compiled_text, fullgraph = "", type(error).__name__
print(json.dumps({{
    "logged": sorted({{s.gb_id or s.reason for s in report.sites if s.filename == __file__}}),
    "fullgraph": fullgraph,
    "eager": eager,
    "compiled": compiled_text,
    "buffer_after_compiled_call": len(BUFFER),
}}))
'''


def measure(name: str) -> dict[str, object]:
    setup, body = OPTIONS[name]
    script = _PROBE.format(body=textwrap.indent(body, "    "), setup=setup)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "probe.py"  # a real file: Dynamo attributes breaks to file and line
        path.write_text(script, encoding="utf-8")
        completed = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    if completed.returncode != 0:
        return {"error": completed.stderr.strip().splitlines()[-1] if completed.stderr else "failed"}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _cell(text: object) -> str:
    return str(text).replace("\n", "⏎").replace("|", "\\|") or "(nothing)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the results here")
    options = parser.parse_args()
    import torch  # only for the version in the header

    results = {name: measure(name) for name in OPTIONS}
    print(f"torch {torch.__version__}\n")
    print("| option | logged breaks | fullgraph=True | compiled call emitted | eager call emitted |")
    print("|---|---|---|---|---|")
    for name, row in results.items():
        if "error" in row:
            print(f"| {name} | error: {_cell(row['error'])} | | | |")
            continue
        logged = ", ".join(row["logged"]) or "0"  # type: ignore[arg-type]
        fullgraph = "passes" if row["fullgraph"] is True else f"fails ({row['fullgraph']})"
        compiled = _cell(row["compiled"]) + (f" (buffer holds {row['buffer_after_compiled_call']})" if "list" in name else "")
        print(f"| {name} | {logged} | {fullgraph} | {compiled} | {_cell(row['eager'])} |")
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump({"torch": torch.__version__, "results": results}, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
