#!/bin/sh
# Fails with one 5000-character line on stderr.
head -c 5000 /dev/zero | tr '\0' 'x' >&2
exit 1
