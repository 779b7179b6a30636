"""The composition root: settings in, one thread's parts out (`builder.py` `RunBuilder`),
above the engine (core/, helps/) and the parts it wires (llm/, tools/, mcp/, openapi/,
storage/, output/, ...). Nothing below imports it.

`builder.py` owns the order of a run's steps; `checks.py`, `model.py`, `tools.py`,
`prompt.py` and `loops.py` are those steps; `toolset.py` gathers a caller's toolsets into
their parts and makes the tool sources; `orchestrator.py` and `toolset_listing.py` build and
list toolsets above a run (`baseagent toolsets`).
"""
