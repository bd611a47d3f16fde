"""After a signal, what the tear-down itself prints stays out of the command's stderr (Ctrl-C during every
kind of run, on real commands: tests/rollout/test_interrupts.py).

Killing the process tree races the threads still running in the command: CI once saw a process
pool's manager thread warn that its resource tracker had died, start another, and that tracker print
a traceback for each semaphore it had never registered. The race cannot be timed from outside, so
these tests make the same noise at the moment it happens (as the kill starts): a thread's warning
and a child started then, each writing to stderr, and check that the one line is all that is left.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import ROOT

NOISY_KILL = """
import os, signal, subprocess, sys
from policylab import interrupts

kill = interrupts._kill_descendants

def noisy_kill():
    print("UserWarning: resource_tracker: process died unexpectedly, relaunching.", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-c", "import sys; print('Traceback (a relaunched tracker)', file=sys.stderr)"])
    kill()

interrupts._kill_descendants = noisy_kill
with interrupts.handled():
    try:
        os.kill(os.getpid(), signal.SIGINT)
    except interrupts.Interrupted:
        if sys.argv[1] == "second":
            os.kill(os.getpid(), signal.SIGINT)
        interrupts.say()
        interrupts.leave(130)
"""


@pytest.mark.parametrize("path", ["second", "first"])
def test_the_tear_down_prints_nothing_but_the_line(path):
    """`second`: a second Ctrl-C ends the command at once (its line is written after the kill);
    `first`: the command leaves after saying its line."""
    done = subprocess.run(
        [sys.executable, "-c", NOISY_KILL, path], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "policylab: interrupted; rerun the same command to resume", done.stderr
