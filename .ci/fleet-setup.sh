#!/usr/bin/env bash
# CI: install the engines the fleet tests drive (OpenSSH server and client; Slurm and munge when
# the distribution has them). Idempotent; needs root and apt-get. Without them it says why and
# exits 0: the fleet tests then skip with that reason (pytest -ra shows it), never silently.
set -uo pipefail
say() { echo "fleet-setup: $*" >&2; }
if [ "$(id -u)" != 0 ]; then say "not root: skipping (fleet tests will skip: not root)"; exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then say "no apt-get: skipping (install openssh-server, slurm-wlm by hand)"; exit 0; fi
want=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || want+=(openssh-server)
command -v ssh >/dev/null 2>&1 || want+=(openssh-client)
command -v ip >/dev/null 2>&1 || want+=(iproute2)
for pkg in slurmctld slurmd slurm-client munge; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    if apt-cache show "$pkg" >/dev/null 2>&1; then want+=("$pkg"); else say "$pkg: not in this distribution's archive (Slurm tests will skip)"; fi
  fi
done
if [ "${#want[@]}" -eq 0 ]; then say "everything already installed"; exit 0; fi
say "installing: ${want[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed (trying the cached lists)"
# policy-rc.d keeps the packages from starting system daemons: the tests start their own, privately.
rcd=/usr/sbin/policy-rc.d
made_rcd=0
if [ ! -e "$rcd" ]; then printf '#!/bin/sh\nexit 101\n' >"$rcd" && chmod +x "$rcd" && made_rcd=1; fi
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null 2>&1 || say "apt-get install ${want[*]} failed (the tests that need them will skip)"
[ "$made_rcd" = 1 ] && rm -f "$rcd"
exit 0
