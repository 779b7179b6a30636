"""A thread's record: what is written as a run goes and read back for resume, sessions and
export, whatever store keeps it (storage/).

`recorder.py` writes it (`SessionRecorder`, the JSONL file `JsonlWriter`); `replay.py` reads
and replays it (history, usage, a pause, resume settings); `pending.py` is a turn paused for
tools the caller runs (its `paused` record); `messages.py` reads chat messages as text;
`plan.py` finds the model's plan in a history (the loop, compaction and export read it).
"""
