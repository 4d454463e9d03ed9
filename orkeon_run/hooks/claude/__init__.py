"""Claude Code's hook contract: settings-shape hooks (docs/hooks.md, "Settings-shape
hooks"). Where they come from (sources.py), which ones match (matchers.py), the JSON line
each reads (payloads.py), running them (run.py), what each answered (answers.py), the
texts the model reads (texts.py), and the hook set that puts it together (settings.py)."""
