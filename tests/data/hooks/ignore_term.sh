#!/bin/sh
# Ignores SIGTERM (and so does the sleep it starts) and never ends by itself: only SIGKILL
# ends it.
trap '' TERM
echo "ignoring TERM"
while :; do sleep 1; done
