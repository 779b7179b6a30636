"""What a run may touch: the sandbox modes, named once for settings, tools and entry points.

`policy.Policy` turns a mode into what may be written and whether commands get the network;
`policy.confine` enforces it in the kernel (Landlock + seccomp, `landlock.py`, `seccomp.py`)
for the commands a run starts and the files its tools write, never for the agent's own
process. `supervisor.py` builds and runs the small C supervisor every command starts under,
so nothing a command started outlives an interrupted run. docs/RELIABILITY.md says what
each mode guarantees and what it does not.
"""
from __future__ import annotations

from typing import Literal, get_args

SandboxMode = Literal["danger-full-access", "workspace-write", "read-only"]
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
