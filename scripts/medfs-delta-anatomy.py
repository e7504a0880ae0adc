#!/usr/bin/python3
"""Anatomy of MedFS deltas: what changed between a page's on-flash base and its update.

Input: the pair dumps `flashstack run` writes with FLASHSTACK_DELTA_PAIRS=FILE under a delta
mode (docs/medfs-reproduction.md, "Why our deltas are large"). Each record: ino, page
index, restacked (the page already had a delta against the same base), our LZO1X-1 delta
length (u32 LE each), the file's name (64 bytes, NUL padded), the base page, the new page.

For every delta it counts the XOR's nonzero bytes and runs, splits them by where they lie
in a SQLite b-tree page (file header, page header, cell pointer array, unallocated gap,
cell content), splits the content changes into bytes moved (8-byte windows present in the
base) and fresh bytes, and compresses the same XOR buffer with python3-lzo's LZO1X-1 to
compare with ours. Restacked deltas are also compared with a delta against the page's
previous version (what a fresh base would give).

Usage: scripts/medfs-delta-anatomy.py [--together] FILE... (a table per file, or one for all)
"""
import struct
import sys
from collections import defaultdict

import lzo

PAGE = 4096
HDR = 16 + 64
REC = HDR + 2 * PAGE


def records(path):
    with open(path, "rb") as f:
        while True:
            b = f.read(REC)
            if len(b) < REC:
                return
            ino, index, restacked, dlen = struct.unpack_from("<IIII", b)
            name = b[16:80].split(b"\0")[0].decode("latin-1")
            yield ino, index, bool(restacked), dlen, name, b[HDR:HDR + PAGE], b[HDR + PAGE:]


def file_class(name):
    for end, cls in (("-wal", "wal"), ("-journal", "journal"), ("-shm", "shm"), (".db", "db")):
        if name.endswith(end):
            return cls
    return "other"


def runs(xor):
    n, inrun = 0, False
    for x in xor:
        if x and not inrun:
            n += 1
        inrun = x != 0
    return n


def btree_regions(page, index):
    """[(region, start, end)] of a SQLite b-tree page, or None if it is not one."""
    h = 100 if index == 0 else 0
    kind = page[h]
    if kind not in (2, 5, 10, 13):
        return None
    hsz = 8 if kind in (10, 13) else 12
    ncells = struct.unpack_from(">H", page, h + 3)[0]
    cs = struct.unpack_from(">H", page, h + 5)[0] or 65536
    ptr_end = h + hsz + 2 * ncells
    if ptr_end > PAGE or cs > PAGE or cs < ptr_end:
        return None
    return h, hsz, ptr_end, cs


def regions_of(base, new, index):
    a, b = btree_regions(base, index), btree_regions(new, index)
    if a is None or b is None:
        return None
    h, hsz = b[0], b[1]
    ptr_end = max(a[2], b[2])
    cs = min(a[3], b[3])
    return [("file-header", 0, h), ("page-header", h, h + hsz), ("cell-pointers", h + hsz, ptr_end),
            ("gap", ptr_end, max(ptr_end, cs)), ("cell-content", max(ptr_end, cs), PAGE)]


def moved_fresh(base, new, xor, lo, hi, grams):
    moved = fresh = 0
    for i in range(lo, hi):
        if not xor[i]:
            continue
        s = max(0, min(i - 3, PAGE - 8))
        if new[s:s + 8] in grams:
            moved += 1
        else:
            fresh += 1
    return moved, fresh


def lzo1x1(buf):
    return len(lzo.compress(bytes(buf), 1, False))


class Acc:
    def __init__(self):
        self.v = defaultdict(int)

    def add(self, k, n=1):
        self.v[k] += n


def analyse(paths):
    acc = defaultdict(Acc)
    last = {}
    for path in paths:
        for ino, index, restacked, dlen, name, base, new in records(path):
            cls = file_class(name)
            xor = bytes(x ^ y for x, y in zip(base, new))
            nz = PAGE - xor.count(0)
            py = lzo1x1(xor)
            for key in (cls, "all"):
                a = acc[key]
                a.add("deltas")
                a.add("ours_bytes", dlen)
                a.add("pylzo_bytes", py)
                a.add("nonzero", nz)
                a.add("runs", runs(xor))
                a.add("under256", dlen < 256)
                a.add("under256_bytes", dlen if dlen < 256 else 0)
                a.add("restacked", restacked)
                if restacked:
                    a.add("restacked_bytes", dlen)
            prev = last.get((path, ino, index))
            if restacked and prev is not None:
                d = lzo1x1(bytes(x ^ y for x, y in zip(prev, new)))
                for key in (cls, "all"):
                    acc[key].add("restacked_known")
                    acc[key].add("restacked_known_bytes", dlen)
                    acc[key].add("restacked_vs_prev_bytes", d)
            last[(path, ino, index)] = new
            regs = regions_of(base, new, index) if cls in ("db", "journal") else None
            if regs is None:
                continue
            grams = {base[i:i + 8] for i in range(PAGE - 7)}
            for key in (cls, "all"):
                acc[key].add("btree_pages")
                acc[key].add("btree_bytes", dlen)
            for reg, lo, hi in regs:
                n = sum(1 for i in range(lo, hi) if xor[i])
                for key in (cls, "all"):
                    acc[key].add("nz:" + reg, n)
                if reg == "cell-content":
                    m, f = moved_fresh(base, new, xor, lo, hi, grams)
                    for key in (cls, "all"):
                        acc[key].add("content_moved", m)
                        acc[key].add("content_fresh", f)
    return acc


def report(title, acc):
    print(f"== {title}")
    for key in sorted(acc, key=lambda k: (k == "all", k)):
        v = acc[key].v
        n = v["deltas"]
        if not n:
            continue
        line = (f"{key:8} deltas {n:6}  ours mean {v['ours_bytes']/n:6.0f} B  python-lzo {v['pylzo_bytes']/n:6.0f} B"
                f"  <256 B {100*v['under256']/n:5.1f}%  xor nonzero {v['nonzero']/n:6.0f} B in {v['runs']/n:5.1f} runs"
                f"  restacked {100*v['restacked']/n:5.1f}%")
        print(line)
        if v["under256"]:
            print(f"{'':8} mean of the deltas under 256 B (DCI's admissible ones): {v['under256_bytes']/v['under256']:.0f} B")
        if v["restacked_known"]:
            k = v["restacked_known"]
            print(f"{'':8} restacked (previous version seen: {k}): against the base {v['restacked_known_bytes']/k:.0f} B,"
                  f" against the previous version {v['restacked_vs_prev_bytes']/k:.0f} B")
        b = v["btree_pages"]
        if b:
            parts = "  ".join(f"{r} {v['nz:'+r]/b:.0f}" for r in
                              ("file-header", "page-header", "cell-pointers", "gap", "cell-content"))
            mf = v["content_moved"] + v["content_fresh"]
            print(f"{'':8} b-tree pages {b} (mean delta {v['btree_bytes']/b:.0f} B), nonzero XOR bytes per page: {parts};"
                  f" content: moved {v['content_moved']/b:.0f}, fresh {v['content_fresh']/b:.0f}"
                  f" ({100*v['content_fresh']/max(mf,1):.0f}% fresh)")


def main():
    paths = sys.argv[1:]
    if not paths:
        sys.exit(__doc__)
    if paths[0] == "--together":
        report("together: " + " ".join(paths[1:]), analyse(paths[1:]))
        return
    for p in paths:
        report(p, analyse([p]))


if __name__ == "__main__":
    main()
