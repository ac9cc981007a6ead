#!/usr/bin/env bash
# Starts podman's Docker-compatible service as a stand-in Docker engine for the Docker
# runner (sandbox/docker.py), on a Debian machine with no Docker; needs root.
#
#   sandbox/podman_service.sh     installs podman and runc if missing, starts the service
#                                 in the background, waits until it answers
#   export DOCKER_HOST=unix:///run/podman/podman.sock
#
# Two settings go into /etc/containers/containers.conf.d/tokendance-sandbox.conf, for the
# service and the podman command alike:
# - runtime runc where cgroups are v1 or hybrid: Debian 12's crun refuses those ("cgroups
#   in hybrid mode not supported");
# - default ulimits of at most 1024 open files and 4096 processes: podman's own (a
#   million of each) cannot be set where the engine lacks CAP_SYS_RESOURCE. Each run's
#   own limits come from the runner.
#   PODMAN_SOCKET  where the service listens (default /run/podman/podman.sock)
set -euo pipefail

socket=${PODMAN_SOCKET:-/run/podman/podman.sock}
conf=/etc/containers/containers.conf.d/tokendance-sandbox.conf

if ! command -v podman >/dev/null; then
    apt-get install -y podman runc
fi

at_most() { if [[ $1 == unlimited || $1 -gt $2 ]]; then echo "$2"; else echo "$1"; fi; }
nofile=$(at_most "$(ulimit -Hn)" 1024)
nproc=$(at_most "$(ulimit -Hu)" 4096)
mkdir -p "$(dirname "$conf")" "$(dirname "$socket")"
{
    echo '[containers]'
    echo "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
    if [[ $(stat -fc %T /sys/fs/cgroup) != cgroup2fs ]] && command -v runc >/dev/null; then
        echo '[engine]'
        echo 'runtime = "runc"'
    fi
} >"$conf"

if [[ -S $socket ]] && curl -sf --unix-socket "$socket" http://d/_ping >/dev/null; then
    echo "podman's service already answers at unix://$socket"
    exit 0
fi
rm -f "$socket"
# From /: conmon leaves files (an `oom` marker after an out-of-memory kill) in its
# working directory, which would otherwise be wherever this script was run.
cd /
setsid podman system service --time=0 "unix://$socket" \
    >/var/log/tokendance-podman-service.log 2>&1 </dev/null &
for _ in $(seq 50); do
    if curl -sf --unix-socket "$socket" http://d/_ping >/dev/null; then
        echo "podman's service answers at unix://$socket (log: /var/log/tokendance-podman-service.log)"
        echo "export DOCKER_HOST=unix://$socket"
        exit 0
    fi
    sleep 0.2
done
echo "podman's service did not answer at unix://$socket; see /var/log/tokendance-podman-service.log" >&2
exit 1
