#!/bin/sh
# On SIGTERM says so on stderr and exits 0: shows that SIGTERM came before SIGKILL.
trap 'echo "got SIGTERM" >&2; exit 0' TERM
echo ready
sleep 30 &
wait
