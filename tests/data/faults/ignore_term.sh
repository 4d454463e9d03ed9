#!/bin/sh
# A hook that ignores SIGTERM (so does the sleep it starts: an ignored signal stays
# ignored across exec): only SIGKILL ends it. Writes its pid to $1.
trap '' TERM
echo $$ > "$1"
echo "ignoring TERM"
while :; do sleep 1; done
