#!/usr/bin/env bash
# CI: install the engines the fleet and gate tests drive (OpenSSH server and client; Slurm and munge,
# Prometheus's promtool and node_exporter when the distribution has them; shellcheck for the Slurm
# wrapper). Idempotent; needs root and apt-get. Without them it says why and exits 0: the tests then
# skip with that reason (pytest -ra shows it), never silently.
set -uo pipefail
say() { echo "fleet-setup: $*" >&2; }
if [ "$(id -u)" != 0 ]; then say "not root: skipping (fleet tests will skip: not root)"; exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then say "no apt-get: skipping (install openssh-server, slurm-wlm by hand)"; exit 0; fi
want=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || want+=(openssh-server)
command -v ssh >/dev/null 2>&1 || want+=(openssh-client)
command -v ip >/dev/null 2>&1 || want+=(iproute2)
optional=()
for pkg in slurmctld slurmd slurm-client munge prometheus prometheus-node-exporter shellcheck; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || optional+=("$pkg")
done
if [ "${#want[@]}" -eq 0 ] && [ "${#optional[@]}" -eq 0 ]; then say "everything already installed"; exit 0; fi
export DEBIAN_FRONTEND=noninteractive
# Before asking the archive what it has: a fresh machine's package lists may be empty.
apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed (trying the cached lists)"
for pkg in "${optional[@]}"; do
  if apt-cache show "$pkg" >/dev/null 2>&1; then want+=("$pkg"); else say "$pkg: not in this distribution's archive (the tests that drive it will skip)"; fi
done
if [ "${#want[@]}" -eq 0 ]; then exit 0; fi
say "installing: ${want[*]}"
# policy-rc.d keeps the packages from starting system daemons: the tests start their own, privately.
rcd=/usr/sbin/policy-rc.d
made_rcd=0
if [ ! -e "$rcd" ]; then printf '#!/bin/sh\nexit 101\n' >"$rcd" && chmod +x "$rcd" && made_rcd=1; fi
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null 2>&1 || say "apt-get install ${want[*]} failed (the tests that need them will skip)"
[ "$made_rcd" = 1 ] && rm -f "$rcd"
exit 0
