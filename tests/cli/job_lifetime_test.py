#!/usr/bin/env python3
"""A job never outlives its command (issue 15): `paraplan execute` interrupted or killed leaves
no launcher, no rank and no file behind.

  job_lifetime_test.py <paraplan> <tests source dir>

A job whose rank stalls (executor.mpi.fault = "stall", a 120 s timeout) is started; once its
ranks run, the command gets SIGINT (Ctrl-C), SIGTERM, SIGHUP or SIGKILL. For the first three the
signal reaches the job and the command ends by that signal (as an interrupted program does); for
SIGKILL nothing can be forwarded, and the launcher (PR_SET_PDEATHSIG) and the ranks die with it.
Within a few seconds no process of the job is left, and no file is left in $TMPDIR (mpirun's session
files included).
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

paraplan = os.path.realpath(sys.argv[1])
recipe = str(Path(sys.argv[2]) / "data" / "execute" / "dp-2.toml")
failures = []
passes = []


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + detail))
    (passes if condition else failures).append(name)


def processes_with(marker):
    """(pid, command line) of every process whose command line holds `marker`."""
    found = []
    for entry in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(entry, "rb") as handle:
                text = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text and int(entry.split("/")[2]) != os.getpid():
            found.append((int(entry.split("/")[2]), text.strip()))
    return found


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


scratch = tempfile.mkdtemp()
environment = dict(os.environ, TMPDIR=scratch)  # where an old launcher put its results file
for signal_number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
    name = signal.Signals(signal_number).name
    marker = "lifetime-" + uuid.uuid4().hex
    command = [paraplan, "execute", recipe, "--timeout", "120", "--set", "executor.mpi.fault=stall",
               "--set", f"description={marker}"]
    host = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment)
    # The host, mpirun and two ranks all carry the marker on their command lines.
    started = wait_for(lambda: len(processes_with(marker)) >= 4, 60)
    check(f"{name}: the job started", started, f"{processes_with(marker)}")
    host.send_signal(signal_number)
    try:
        _, errors = host.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        host.kill()
        _, errors = host.communicate()
        check(f"{name}: the command ended", False, "still running 20 s after the signal")
        continue
    if signal_number != signal.SIGKILL:
        check(f"{name}: the command ends by the signal", host.returncode == -signal_number,
              f"exit {host.returncode}; {errors.decode(errors='replace')[-300:]}")
        check(f"{name}: it says so", b"interrupted" in errors, errors.decode(errors="replace")[-300:])
    gone = wait_for(lambda: not processes_with(marker), 10)
    check(f"{name}: no launcher or rank is left", gone, f"{processes_with(marker)}")
    for pid, _ in processes_with(marker):
        os.kill(pid, signal.SIGKILL)

check("no temporary file is left", os.listdir(scratch) == [], f"{os.listdir(scratch)}")
if not os.listdir(scratch):
    os.rmdir(scratch)
print(f"{len(passes)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
