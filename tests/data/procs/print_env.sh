#!/bin/sh
# Prints ORKEON_TEST_VAR, whether HOME is set, and the working directory.
echo "var=${ORKEON_TEST_VAR-unset}"
echo "home=${HOME-unset}"
pwd
