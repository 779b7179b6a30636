"""Loops that run loops for a tool call: `delegate.py` is the `delegate` tool and the one
runner of sub-agents (`Delegation`); `specialists.py` the `delegate_to_specialist` tool and
what a named specialist's tools mean (config/specialists.py holds their tables)."""
