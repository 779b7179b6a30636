"""What the engine says happened, and the interface it says it through.

`events.py`: the engine's own events and items (plain dataclasses). `interface.py`: the
emitter's interface (`EventEmitter`) and the listeners' (`EventListener`). The engine (core/)
and the mappers in output/ both import this package; it imports neither. (`baseagent.events`,
the public name, is the Codex wire types of output/events.py.)
"""
