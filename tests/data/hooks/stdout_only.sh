#!/bin/sh
# Fails with its message on stdout only (blank lines before it are skipped).
echo
echo "lint: 3 problems in $1"
exit 1
