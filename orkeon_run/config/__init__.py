"""Configuration: the `--inputs` document (inputs.py), the crews (crews.py), the trust of
a workspace's own settings and crews (trust.py), and where the shell's settings come from
(shell_settings.py). Data, validated; nothing here runs anything."""
