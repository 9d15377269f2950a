#!/usr/bin/env bash
# Builds the minimal Debian base image the Dockerfile starts from, from Debian packages alone:
# debootstrap's minbase variant (apt, dpkg, bash, coreutils; no init system, no docs) plus
# ca-certificates, imported as an image with no registry involved.
#
#   tools/container/base-image.sh [image]        (default localhost/mcp-identity-base:bookworm)
#
# Needs root, debootstrap and podman (Debian: apt-get install debootstrap podman). MIRROR and
# SUITE override the Debian mirror and release.
set -euo pipefail

image="${1:-localhost/mcp-identity-base:bookworm}"
suite="${SUITE:-bookworm}"
mirror="${MIRROR:-http://deb.debian.org/debian}"

rootfs="$(mktemp -d /tmp/mcp-identity-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT

echo "debootstrap $suite (minbase) into $rootfs"
debootstrap --variant=minbase --include=ca-certificates "$suite" "$rootfs" "$mirror" >/dev/null

# Security and point-release updates too, so image builds install the fixed packages.
cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
SOURCES
# Image layers keep no package caches; apt-get in a build stage fetches lists anew.
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
  >"$rootfs/etc/apt/apt.conf.d/90-no-recommends"
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb

echo "importing $image"
tar --numeric-owner -C "$rootfs" -c . |
  podman import -q --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$image" >/dev/null
podman image inspect --format '{{.Id}} {{.Size}}' "$image"
