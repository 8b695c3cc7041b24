#!/bin/sh
# Make the highwater base rootfs tarball with debootstrap. Run as root.
#
# usage: mkrootfs.sh SUITE MIRROR PACKAGES(comma-separated) OUT.tar
#
# The tarball is what `docker import` turns into highwater/base:<hash>. This
# script is part of the base image's content hash: change it and the base is
# rebuilt. It writes OUT.tar atomically (via OUT.tar.part) so an interrupted
# run never leaves a truncated cache entry behind.
set -eu

suite=$1
mirror=$2
packages=$3
out=$4

work=$(mktemp -d "${out}.work.XXXXXX")
# debootstrap bind-mounts /proc etc. inside the target; if it dies half-way,
# unmount before removing, or rm -rf would walk into the host's /proc.
cleanup() {
    for m in proc sys dev/pts dev; do
        umount -l "$work/rootfs/$m" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" "$mirror"

r=$work/rootfs
# Downloaded packages and indexes are dead weight in an image nobody runs apt in
# offline; docs, man pages and locales are never read by the broker.
rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* \
       "$r"/usr/share/doc/* "$r"/usr/share/man/* "$r"/usr/share/info/* \
       "$r"/usr/share/locale/* "$r"/var/log/*.log "$r"/var/cache/debconf/*-old
# Docker provides /dev, /proc, /sys, /etc/hostname, /etc/hosts and
# /etc/resolv.conf at run time; device nodes in the tarball only get in the way.
tar -C "$r" --numeric-owner \
    --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* \
    -cf "${out}.part" .
mv "${out}.part" "$out"
