"""The agent loop: one role's session with its model (loop.py), and keeping its
conversation within the model's context window (compaction.py)."""
