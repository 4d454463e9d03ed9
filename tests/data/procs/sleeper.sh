#!/bin/sh
# Says it started, then sleeps 30 s; dies of SIGTERM like any plain process.
echo started
sleep 30
