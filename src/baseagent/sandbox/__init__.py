"""What a run may touch: the sandbox modes, named once for settings, tools and entry points.

The file tools check the mode for clear errors; the kernel-level enforcement for commands
lives beside this (see docs/RELIABILITY.md for what each mode guarantees).
"""
from __future__ import annotations

from typing import Literal, get_args

SandboxMode = Literal["danger-full-access", "workspace-write", "read-only"]
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
