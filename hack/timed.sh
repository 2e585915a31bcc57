#!/usr/bin/env bash
# timed.sh NAME CMD [ARG...]: runs CMD and then prints how long it took,
# "== NAME: N s" (with its exit status when not 0), keeping that status.
# make test's stages print their times this way, so a CI log shows where a
# run's minutes went.
set -u
name=$1
shift
start=$(date +%s)
rc=0
"$@" || rc=$?
s=$(($(date +%s) - start))
if [ $rc = 0 ]; then echo "== $name: $s s"; else echo "== $name: $s s, exit status $rc"; fi
exit $rc
