"""What the model sees of a long thread: token accounting (`tokens.py`), prompt-cache
markers and keys (`caching.py`) and compaction (`compaction.py`: prune, summarise, fall
back), the loop's context policy."""
