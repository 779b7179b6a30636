"""Whether an answer is shown to work: `evidence.py` decides if a turn is verified by
evidence (a command that passed after the last edit) or by statement; `attempts.py` runs N
whole attempts and keeps the best by that evidence (`--attempts`)."""
