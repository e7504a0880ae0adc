"""Sweep throughput (docs/performance.md): python bench_sweep.py local|ray|points [N]

local/ray: a 16-point sweep of tiny points (4 launches x 2 stacks x 2 seeds on a small
device, factory-new phone), Ray started on this machine's cores inside the measurement.
points: N single runs, one after another, in this one process (the bindings' per-point
cost; the CLI's is a process per point)."""

import os
import sys
import time

import flashstack

SMALL = {"device.nand.geometry.blocks_per_plane": 512}
GRID = {
    "workload": ["gmail:launch", "polish:launch", "spotify:launch", "twitter:launch"],
    "stack": ["default", "mobifs"],
    "seed": [1, 2],
    "start": "fresh",
    "overrides": SMALL,
}

mode = sys.argv[1]
started = time.time()
if mode == "points":
    for seed in range(int(sys.argv[2])):
        flashstack.run(workload="polish:launch", stack="default", seed=seed + 1, overrides=SMALL, start="fresh")
else:
    if mode == "ray":
        import ray

        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    sweep_started = time.time()
    result = flashstack.sweep(GRID, backend=mode, progress=False)
    assert len(result.frame) == 16 and not result.failed
    print(f"{mode}: 16 points in {time.time() - sweep_started:.2f} s after start-up")
print(f"{mode}: {time.time() - started:.2f} s in the script")
