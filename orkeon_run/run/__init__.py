"""One run: everything `--inputs` names checked once (prepare.py), the run directory
(rundir.py), the step's context (context.py), the runner (runner.py), the steps (steps/),
the audit after a batch (audit.py), the documents a run leaves (result.py), and what
watches it: progress on stderr (progress*.py) and traces (telemetry.py, spans.py)."""
