#!/usr/bin/env bash
# A phone-like corpus for the compressibility predictor (docs/predictor.md): the files a
# flashstack phone holds, copied out through a FUSE mount (`flashstack mount`; needs fuse3).
#
#   scripts/predictor-phone-corpus.sh OUT_DIR [FLASHSTACK_BINARY]
#
# OUT_DIR/personas: every file of the six-app mix after a run on a factory-new phone (the
#   personas' real SQLite databases, WAL and journals, preferences, caches, pictures).
# OUT_DIR/aged: from the built-in aged phone (built on first use by `flashstack run`), the
#   first files of every directory (APKs, odex, .so, app databases, media, downloads), at
#   most 8 MiB of each, so that no single kind of file dominates.
# Deterministic: the same binary gives the same bytes.
set -euo pipefail
out=${1:?usage: predictor-phone-corpus.sh OUT_DIR [FLASHSTACK_BINARY]}
fs=$(realpath "${2:-target/release/flashstack}")
per_dir_max=4
bytes_max=$((8 << 20))
scratch=$(mktemp -d)
cleanup() {
    fusermount3 -u "$scratch/mnt" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT
mkdir -p "$out" "$scratch/mnt"

# mount_and_wait ARGS...: mounts the stack on $scratch/mnt in the background.
mount_and_wait() {
    "$fs" mount "$@" "$scratch/mnt" > "$scratch/mount.log" 2>&1 &
    for _ in $(seq 600); do
        mountpoint -q "$scratch/mnt" && return 0
        sleep 0.5
    done
    cat "$scratch/mount.log" >&2
    return 1
}

unmount_and_wait() {
    fusermount3 -u "$scratch/mnt"
    wait
}

# copy_first LIMIT DEST: the first LIMIT files (sorted) of every directory under the mount.
copy_first() {
    local limit=$1 dest=$2
    (cd "$scratch/mnt" && find . -type d | sort) | while read -r dir; do
        (cd "$scratch/mnt/$dir" && find . -maxdepth 1 -type f | sort | sed -n "1,${limit}p") |
            while read -r file; do
                mkdir -p "$dest/$dir"
                head -c "$bytes_max" "$scratch/mnt/$dir/$file" > "$dest/$dir/$file"
            done
    done
}

echo "== the mix on a factory-new phone"
"$fs" run --fresh --workload mix --quiet --image-out "$scratch/fresh.img" > /dev/null
mount_and_wait --image "$scratch/fresh.img"
mkdir -p "$out/personas"
cp -r "$scratch/mnt/." "$out/personas/"
unmount_and_wait

echo "== the built-in aged phone"
"$fs" run --workload messenger --quiet > /dev/null # builds it on first use
phone=$(ls -t "${FLASHSTACK_CACHE_DIR:-$HOME/.cache/flashstack}"/ldc-emmc-*.phone | head -n 1)
mount_and_wait --phone "$phone"
copy_first "$per_dir_max" "$out/aged"
unmount_and_wait
echo "== $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1) in $out"
