"""Ctrl-C in the middle of a call: `seconds_to_stop(setup, call)` runs `setup` then `call` (Python
source) in a fresh interpreter, sends it SIGINT one second into the call, and returns how long
after the signal KeyboardInterrupt came (an AssertionError when the call finished instead)."""
import os
import subprocess
import sys


def seconds_to_stop(setup, call):
    script = f"""
import os, signal, threading, time
import dplace
{setup}
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
began = time.time()
try:
    {call}
    print("finished")
except KeyboardInterrupt:
    print("interrupted", time.time() - began - 1.0)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(os.environ), timeout=60)
    words = run.stdout.split()
    assert words and words[0] == "interrupted", run.stdout + run.stderr
    return float(words[1])
