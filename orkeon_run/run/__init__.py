"""One run: prepare, runner, steps, audit, result, progress, telemetry."""
