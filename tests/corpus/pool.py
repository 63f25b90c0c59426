"""Hand tasks to at most two worker processes, with a per-program timeout.

Each worker measures a batch of programs, then exits and a fresh one starts;
a worker that runs past the timeout or dies is killed and replaced, and the
program it was on is reported as failed, so one bad program cannot take the
run down or poison the programs after it. A program that cannot be measured
in a worker that measured others first gets one more try in a fresh worker.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_WORKERS = 2
BATCH_SIZE = 50


class _Worker:
    """One ``python -m tests.corpus.worker`` process and the tasks it has answered."""

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile()
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.corpus.worker"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=environment,
        )
        self.answered = 0

    def ask(self, task: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin and self.process.stdout
        try:
            self.process.stdin.write(json.dumps(task) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return self._failed(task, "worker died before the task")
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return self._failed(task, f"timeout after {timeout:.0f} s")
        line = self.process.stdout.readline()
        if not line:
            return self._failed(task, "worker died: " + self._stderr_tail())
        self.answered += 1
        return json.loads(line)

    def _failed(self, task: dict[str, Any], why: str) -> dict[str, Any]:
        self.close(kill=True)
        return {"name": task["name"], "failure": why}

    def _stderr_tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-600:].strip()

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        elif self.process.stdin:
            self.process.stdin.close()
        self.process.wait()
        self.log.close()


def _state_suspect(answer: dict[str, Any], worker: _Worker) -> bool:
    """The program could not be measured in a worker that had measured others first.

    Programs share a worker for speed, and one of them can leave state behind
    (seen twice in about ten full runs: "dictionary changed size during
    iteration", never reproduced alone), so such a program is measured once
    more in a fresh worker. The answer keeps the first error under
    ``retried_after`` and the run lists it; a program that fails again is
    reported as before.
    """
    error = answer.get("original", {}).get("error")
    return error is not None and worker.answered > 1 and worker.alive()


def run_tasks(
    tasks: Sequence[dict[str, Any]],
    timeout: float,
    workers: int = DEFAULT_WORKERS,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Answers by task name. Tasks are taken in order by whichever worker is free."""
    todo: queue.Queue[dict[str, Any]] = queue.Queue()
    for task in tasks:
        todo.put(task)
    answers: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def serve() -> None:
        worker: _Worker | None = None
        while True:
            try:
                task = todo.get_nowait()
            except queue.Empty:
                break
            if worker is None or not worker.alive() or worker.answered >= BATCH_SIZE:
                if worker is not None and worker.alive():
                    worker.close()
                worker = _Worker()
            answer = worker.ask(task, timeout)
            if _state_suspect(answer, worker):
                worker.close()
                worker = _Worker()
                answer = {**worker.ask(task, timeout), "retried_after": answer["original"]["error"]}
            with lock:
                answers[task["name"]] = answer
                if progress:
                    progress(answer)
        if worker is not None and worker.alive():
            worker.close()

    threads = [threading.Thread(target=serve) for _ in range(max(1, min(workers, len(tasks))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers
