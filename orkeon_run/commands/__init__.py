"""One module per command: each parses nothing (cli.py's typer app does), calls the core
function it stands for, prints what the command promises and returns the exit code."""
