#!/usr/bin/env bash
# The MobiFS seed's baseline, measured: the kernel's own ext4 (data=journal, the seed's
# setting, and data=ordered, Android's) on flashstack's emulated device through
# `flashstack mount --block` and a loop device, against flashstack's F2FS (`default`) and
# MobiFS (`mobifs`) mounted with `flashstack mount`, all running the same program: the
# seed's file-system write test, N records of 4 KiB appended to one file, each fsync'd.
# Prints the bytes each configuration wrote to the device per record (docs/mobifs-reproduction.md,
# "The baseline differs from the seed's").
#
# Needs root, /dev/fuse, fuse3, losetup and mkfs.ext4 (scripts/test installs them), and a
# release build (`cargo build --release -p flashstack`).
#
#   scripts/mobifs-ext4-baseline.sh [N] [OUT_DIR]     # N defaults to 2000
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
out=${2:-$(mktemp -d /tmp/mobifs-ext4.XXXXXX)}
bin=$PWD/target/release/flashstack
device="ldc-emmc+nand.geometry.blocks_per_plane=1024" # a 256 MiB eMMC of the LDC preset
mkdir -p "$out/mnt" "$out/e4"
export FLASHSTACK_CACHE_DIR="$out/cache"

cat > "$out/fsync_records.py" <<'EOF'
import os, sys
path, n = sys.argv[1], int(sys.argv[2])
record = bytearray((i * 7) & 0xFF for i in range(4096))
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(n):
    record[8:16] = i.to_bytes(8, "little")
    os.write(fd, record)
    os.fsync(fd)
os.close(fd)
EOF

# Starts a mount in the background and waits for it (up to 10 s).
start() {
    "$bin" mount "$@" > "$out/mount.log" 2>&1 &
    for _ in $(seq 100); do
        mountpoint -q "$out/mnt" && return 0
        sleep 0.1
    done
    cat "$out/mount.log" >&2
    return 1
}
stop() {
    fusermount3 -u "$out/mnt"
    # The daemon writes the metrics and the image as it exits.
    while pgrep -f "mount .*$out/mnt" > /dev/null; do sleep 0.1; done
}

# ext4 NAME OPTIONS RECORDS: mkfs in a first mount, then mount ext4 and write the records
# in a second, whose metrics are kept (so mkfs's writes are not counted).
ext4() {
    local name=$1 options=$2 records=$3 loop
    start --block "$out/mnt" --device "$device" --image "$out/$name.img"
    loop=$(losetup -f --show "$out/mnt/disk.img")
    mkfs.ext4 -q -F "$loop"
    losetup -d "$loop"
    stop
    start --block "$out/mnt" --device "$device" --image "$out/$name.img" --metrics "$out/$name.json"
    loop=$(losetup -f --show "$out/mnt/disk.img")
    mount -o "$options" "$loop" "$out/e4"
    python3 "$out/fsync_records.py" "$out/e4/records" "$records"
    umount "$out/e4"
    losetup -d "$loop"
    stop
}

# f2fs NAME STACK RECORDS: a fresh F2FS in a first mount, the records in a second.
f2fs() {
    local name=$1 stack=$2 records=$3
    start "$out/mnt" --stack "$stack" --device "$device" --image "$out/$name.img"
    stop
    start "$out/mnt" --stack "$stack" --device "$device" --image "$out/$name.img" --metrics "$out/$name.json"
    python3 "$out/fsync_records.py" "$out/mnt/records" "$records"
    stop
}

for records in 0 "$n"; do
    ext4 "ext4-journal-$records" data=journal "$records"
    ext4 "ext4-ordered-$records" data=ordered "$records"
    f2fs "f2fs-$records" default "$records"
    f2fs "mobifs-$records" mobifs "$records"
done

python3 - "$out" "$n" <<'EOF'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
def figures(name):
    d = json.load(open(f"{out}/{name}.json"))
    return d["host"]["write_bytes"], d["host"]["flush_requests"], d["nand"]["page_programs"]
print(f"{n} records of 4 KiB, each fsync'd (the mount and unmount alone subtracted)")
print(f"{'configuration':<22}{'device bytes/record':>20}{'4 KiB blocks/record':>21}{'flushes/record':>16}{'NAND programs':>15}")
rows = [("ext4 data=journal", "ext4-journal"), ("ext4 data=ordered", "ext4-ordered"),
        ("F2FS (default)", "f2fs"), ("MobiFS (mobifs)", "mobifs")]
for label, name in rows:
    (w, f, p), (w0, f0, p0) = figures(f"{name}-{n}"), figures(f"{name}-0")
    per = (w - w0) / n
    print(f"{label:<22}{per:>20.0f}{per / 4096:>21.2f}{(f - f0) / n:>16.2f}{p - p0:>15}")
EOF
echo "files in $out"
