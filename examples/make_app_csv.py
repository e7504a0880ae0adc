#!/usr/bin/env python3
"""Writes examples/app.csv: a small block trace in the Pixel 6a CSV format
(`proces,device,rw_flag,sector,size,timestamp`; 512-byte sectors, seconds).

The requests are made up (the public Pixel traces carry no license), shaped like a
messenger app's session: SQLite database and journal writes, fsync'd in small bursts,
reads of app code and media, a photo written in 512 KiB pieces, and the two artefacts of
the real traces that `--clean` handles: about 8% of requests logged twice within 10 ms
under a second process name, and one idle gap of 25 s. Deterministic: running it again
writes the same bytes.
"""

import random

rng = random.Random(20261125)
APP = "com.example.chat"
DB = 4_000_000          # database file, 16 MiB of sectors from here
JOURNAL = 4_040_000     # rollback journal
CODE = 1_200_000        # app code and resources
MEDIA = 9_000_000       # pictures
lines = ["proces,device,rw_flag,sector,size,timestamp"]
t = 44186.010000


def log(process, flag, sector, sectors):
    global t
    lines.append(f"{process},sda,{flag},{sector},{sectors},{t:.6f}")
    if rng.random() < 0.08:  # logged again under the writeback thread
        lines.append(f"kworker/u16:3,sda,{flag},{sector},{sectors},{t + rng.uniform(0.0005, 0.004):.6f}")


for session in range(12):
    for _ in range(rng.randint(10, 30)):               # launch: read code and resources
        t += rng.expovariate(1 / 0.002)
        log(APP, "R", CODE + rng.randrange(0, 200_000, 8), rng.choice([8, 32, 64, 256]))
    for _ in range(rng.randint(5, 15)):                # transactions
        t += rng.expovariate(1 / 0.4)
        log(APP, "W", JOURNAL + rng.randrange(0, 64, 8), 8)
        for _ in range(rng.randint(1, 4)):
            t += rng.expovariate(1 / 0.0008)
            log(APP, "W", DB + rng.randrange(0, 32_768, 8), rng.choice([8, 8, 8, 16]))
        t += rng.expovariate(1 / 0.001)
        log(APP, "W", JOURNAL, 8)
    if session % 4 == 3:                               # a picture, 2 MiB
        base = MEDIA + session * 8192
        for piece in range(4):
            t += rng.expovariate(1 / 0.003)
            log(APP, "W", base + piece * 1024, 1024)
    for _ in range(rng.randint(3, 10)):                # scroll: media reads
        t += rng.expovariate(1 / 0.05)
        log(APP, "R", MEDIA + rng.randrange(0, 100_000, 8), rng.choice([64, 128, 256]))
    t += 25.0 if session == 5 else rng.uniform(1.0, 6.0)

with open("examples/app.csv", "w") as out:
    out.write("\n".join(lines) + "\n")
