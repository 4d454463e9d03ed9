#!/bin/sh
# Ignores SIGTERM (and so does the sleep it starts): only SIGKILL ends it.
trap '' TERM
echo "started"
sleep 30
echo "never printed"
