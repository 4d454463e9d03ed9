#!/bin/sh
# Prints 50 MB on stdout, then fails.
yes "fifty megabytes of output" | head -c 52428800
exit 1
