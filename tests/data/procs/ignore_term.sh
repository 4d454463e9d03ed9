#!/bin/sh
# Ignores SIGTERM (and so does the sleep it starts): only SIGKILL ends it.
trap '' TERM
echo ready
sleep 30
