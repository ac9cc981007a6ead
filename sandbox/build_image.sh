#!/usr/bin/env bash
# Builds the sandbox image of the Docker runner (sandbox/docker.py).
#
#   sandbox/build_image.sh               no registry needed: a minimal Debian root
#                                        filesystem (debootstrap from Debian's packages:
#                                        python3, numpy, pandas, matplotlib, socat)
#                                        imported as the image; needs root
#   sandbox/build_image.sh --dockerfile  where the engine reaches a registry:
#                                        sandbox/Dockerfile (python:3.11-slim + pip)
#
# Both give Python 3.11 with numpy, pandas and matplotlib, the non-root user 10001 and
# /work as the working directory.
#   ENGINE        docker or podman (default: docker if its engine answers, else podman)
#   IMAGE         the image's name (default tokendance-sandbox:latest, the runner's default)
#   DEBIAN_SUITE  the Debian release to bootstrap (default bookworm: Python 3.11)
#   DEBIAN_MIRROR a Debian mirror for debootstrap (default: debootstrap's own)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
IMAGE=${IMAGE:-tokendance-sandbox:latest}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
# socat bridges the proxy's socket to the loopback port HTTP(S)_PROXY names (allowed
# domains); ca-certificates lets HTTPS through it verify.
PACKAGES=python3,python3-numpy,python3-pandas,python3-matplotlib,socat,ca-certificates

pick_engine() {
    if [[ -n ${ENGINE:-} ]]; then
        echo "$ENGINE"
    elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        echo docker
    elif command -v podman >/dev/null; then
        echo podman
    else
        echo "no docker or podman command here: install one (apt-get install podman)" >&2
        exit 1
    fi
}

from_dockerfile() {
    "$1" build --tag "$IMAGE" - <"$here/Dockerfile"
}

from_debian() {
    local engine=$1
    if [[ $(id -u) -ne 0 ]]; then
        echo "debootstrap needs root; run as root, or use --dockerfile" >&2
        exit 1
    fi
    command -v debootstrap >/dev/null || apt-get install -y debootstrap
    root=$(mktemp -d /var/tmp/tokendance-sandbox-rootfs.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    # shellcheck disable=SC2086  # DEBIAN_MIRROR is one word or none
    debootstrap --variant=minbase --include="$PACKAGES" \
        "$DEBIAN_SUITE" "$root" ${DEBIAN_MIRROR:-}
    rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
        "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/info \
        "$root"/usr/share/locale
    echo 'sandbox:x:10001:10001::/work:/usr/sbin/nologin' >>"$root/etc/passwd"
    echo 'sandbox:x:10001:' >>"$root/etc/group"
    install -d -o 10001 -g 10001 "$root/work"
    # No setuid or setgid program: the runner also drops every capability.
    find "$root" -xdev -perm /6000 -type f -exec chmod ug-s {} +
    tar --numeric-owner -C "$root" -c . | "$engine" import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV HOME=/tmp' \
        --change 'ENV MPLBACKEND=Agg' \
        --change 'ENV MPLCONFIGDIR=/tmp/matplotlib' \
        --change 'ENV PYTHONDONTWRITEBYTECODE=1' \
        --change 'USER 10001:10001' \
        --change 'WORKDIR /work' \
        --change 'CMD ["python3"]' \
        - "$IMAGE"
}

engine=$(pick_engine)
case ${1:-} in
    --dockerfile) from_dockerfile "$engine" ;;
    "") from_debian "$engine" ;;
    *)
        echo "usage: $0 [--dockerfile]" >&2
        exit 2
        ;;
esac
# Explicit ulimits: podman's defaults may be more than this shell may set.
"$engine" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    "$IMAGE" python3 -c \
    'import sys, numpy, pandas, matplotlib; print("built:", sys.version.split()[0], "numpy", numpy.__version__, "pandas", pandas.__version__, "matplotlib", matplotlib.__version__)'
