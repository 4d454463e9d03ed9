#!/bin/sh
# Dies of SIGTERM sent to itself: a shell would report 143.
kill -TERM $$
sleep 5
