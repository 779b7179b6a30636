"""atomic_write: never a torn file, and nothing left behind by a process killed mid-write."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from baseagent.fsutil import atomic_write

# A writer stuck in fsync (a slow disk) with its data already written, then SIGKILLed.
STUCK_WRITER = """
import os, sys, time
from pathlib import Path
from baseagent import fsutil
def stuck(fd):
    print("writing", flush=True)
    time.sleep(60)
fsutil.os.fsync = stuck
fsutil.atomic_write(Path(sys.argv[1]), b"new content " * 100000)
"""


def test_killed_writer_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("old")
    proc = subprocess.Popen([sys.executable, "-c", STUCK_WRITER, str(target)],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert proc.stdout.readline() == "writing\n"
        time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert sorted(os.listdir(tmp_path)) == ["file.txt"]
    assert target.read_text() == "old"


def test_atomic_write_replaces_and_keeps_mode(tmp_path):
    target = tmp_path / "x.sh"
    atomic_write(target, b"one")
    assert target.read_bytes() == b"one"
    atomic_write(target, b"two", 0o751)
    assert target.read_bytes() == b"two"
    assert os.stat(target).st_mode & 0o777 == 0o751
    assert sorted(os.listdir(tmp_path)) == ["x.sh"]
    long_name = tmp_path / ("n" * 255)
    atomic_write(long_name, b"longest name")
    assert long_name.read_bytes() == b"longest name"
