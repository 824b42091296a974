#!/bin/sh
# Restart a server started by this script: stop the one in PIDFILE (SIGTERM, then SIGKILL after 20 s), start
# COMMAND detached (its own session, output appended to LOG), write its pid, and return at once (bench ab
# then waits for the first token). An --arm of `bench ab` for a server that is no systemd unit or container:
#   benchmarks/restart_server.sh PIDFILE LOG [VAR=VALUE ...] -- COMMAND [ARGS ...]
set -u
pidfile="${1:?usage: restart_server.sh PIDFILE LOG [VAR=VALUE ...] -- COMMAND ...}"
log="${2:?usage: restart_server.sh PIDFILE LOG [VAR=VALUE ...] -- COMMAND ...}"
shift 2
if [ -s "$pidfile" ]; then
  old="$(cat "$pidfile")"
  if kill -0 "$old" 2>/dev/null; then
    kill "$old" 2>/dev/null
    i=0
    while kill -0 "$old" 2>/dev/null && [ "$i" -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$old" 2>/dev/null
    while kill -0 "$old" 2>/dev/null; do sleep 0.1; done
  fi
fi
set -- env "$@"
for arg in "$@"; do [ "$arg" = "--" ] && break; done
# drop the "--" between the variables and the command
n=$#; i=0
for arg in "$@"; do
  i=$((i + 1))
  if [ "$arg" = "--" ]; then continue; fi
  set -- "$@" "$arg"
done
shift "$n"
setsid "$@" >>"$log" 2>&1 </dev/null &
echo $! >"$pidfile"
