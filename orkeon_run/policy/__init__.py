"""Policy: what a call may do. Rule patterns and rule sets (rules.py), the session's gate
(gate.py), the shell's program rules (programs.py), path resolution inside the workspace
and a role's roots (paths.py), and splitting a command into words (words.py)."""
