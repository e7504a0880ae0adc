"""The Python package against the CLI (run by tests/python.rs; docs/python.md).

Environment: FLASHSTACK_BIN (the CLI binary of the same build), FLASHSTACK_SCRATCH (a
directory for files). Prints one line per check; any failed assertion fails the test.
"""

import json
import os
import subprocess
import sys
import time

import pandas as pd

import flashstack

BIN = os.environ["FLASHSTACK_BIN"]
SCRATCH = os.environ["FLASHSTACK_SCRATCH"]
SMALL = {"device.nand.geometry.blocks_per_plane": 512}
GRID = {
    "workload": ["gmail:launch", "polish:launch"],
    "stack": ["default", "mobifs"],
    "seed": [1, 7],
    "start": "fresh",
    "overrides": SMALL,
}


def cli(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def a_point_is_the_cli_json_for_the_same_seed():
    result = flashstack.run(workload="polish:launch", stack="mobifs", seed=7, overrides=SMALL, start="fresh")
    path = os.path.join(SCRATCH, "run.json")
    out = cli("run", "-q", "--workload", "polish:launch", "--stack",
              "mobifs+device.nand.geometry.blocks_per_plane=512", "--seed", "7", "--fresh", "--json", path)
    assert out.returncode == 0, out.stderr
    with open(path) as f:
        assert f.read() == result.json, "the bindings' JSON differs from the CLI's"
    assert result.workload == "polish:launch" and result.device["nand"]["page_programs"] > 0
    timeline = result.to_pandas()
    assert len(timeline) >= 2 and "t_ns" in timeline.columns, timeline
    assert len(result.to_pandas("user_ops")) == 1
    assert result.to_arrow().num_rows == len(timeline)
    other = flashstack.run(workload="polish:launch", stack="mobifs", seed=8, overrides=SMALL, start="fresh")
    assert other.json != result.json, "the seed changed nothing"


def a_block_point_is_the_cli_json_and_sweeps_on_devices():
    device = "ldc-emmc-ldc+nand.geometry.blocks_per_plane=512"
    result = flashstack.run(workload="ldc:tw", device="ldc-emmc-ldc", seed=3, contents=True,
                            overrides={"nand.geometry.blocks_per_plane": 512})
    path = os.path.join(SCRATCH, "block.json")
    out = cli("run", "-q", "--device", device, "--workload", "ldc:tw", "--contents", "--seed", "3",
              "--json", path)
    assert out.returncode == 0, out.stderr
    with open(path) as f:
        assert f.read() == result.json, "the bindings' block-level JSON differs from the CLI's"
    grid = {"workload": ["ldc:tw", "synthetic:uniform,count=2000"], "device": ["ldc-emmc-pm", "ldc-emmc-ldc"],
            "contents": True, "overrides": {"nand.geometry.blocks_per_plane": 512}}
    local = flashstack.sweep(grid, backend="local", progress=False)
    columns = ["workload", "device", "nand.geometry.blocks_per_plane", "contents", "seed"]
    assert list(local.frame.columns[:5]) == columns, local.frame.columns
    assert len(local.frame) == 4 and not local.failed
    pm, ldc = local.frame["compression.pages_compressed_host"][:2]
    assert pm == 0 and ldc > 0, (pm, ldc)


def errors_carry_the_cli_message():
    try:
        flashstack.run(workload="gmail:nope", start="fresh")
        raise AssertionError("an unknown persona ran")
    except flashstack.FlashstackError as error:
        out = cli("run", "-q", "--workload", "gmail:nope", "--fresh")
        assert out.stderr == f"error: {error}\n", (out.stderr, str(error))
    try:
        flashstack.run(workload="zoom", stack="default+cache.nonsense=1", start="fresh")
        raise AssertionError("a bad stack ran")
    except flashstack.FlashstackError as error:
        assert "no field 'cache.nonsense'" in str(error), error


def listings():
    assert "mobifs" in flashstack.stack_presets() and "ldc-emmc" in flashstack.device_presets()
    assert "gmail:launch" in flashstack.personas()
    assert "[device" in flashstack.stack_toml("default")


def bad_grids_fail_before_any_point_runs():
    ran = []
    cases = [
        ({"workloads": "zoom"}, "grid: workloads: unknown parameter"),
        ({"workload": "zoom", "overrides": {"cache.nonsense": 1}}, 'overrides."cache.nonsense" = "1"'),
        ({"workload": "zoom", "overrides": {"device.ftl.gc.policy": ["greedy", "banana"]}}, "unknown variant `banana`"),
        ({"workload": ["zoom", "gmail:nope"]}, 'workload = "gmail:nope"'),
        ({"workload": "zoom", "seed": "one"}, "seed:"),
    ]
    for grid, expected in cases:
        try:
            flashstack.sweep(grid, progress=lambda *a: ran.append(a))
            raise AssertionError(f"{grid} ran")
        except flashstack.GridError as error:
            assert expected in str(error), (grid, str(error))
    assert not ran, ran


def sweeps_agree_local_ray_and_cli():
    import ray

    started = time.time()
    local = flashstack.sweep(GRID, backend="local", progress=False)
    local_s = time.time() - started
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    started = time.time()
    remote = flashstack.sweep(GRID, backend="ray", progress=False)
    ray_s = time.time() - started
    assert local.frame.shape[0] == 8 and not local.failed and not remote.failed
    pd.testing.assert_frame_equal(local.frame, remote.frame)
    grid_path = os.path.join(SCRATCH, "grid.toml")
    with open(grid_path, "w") as f:
        f.write('workload = ["gmail:launch", "polish:launch"]\nstack = ["default", "mobifs"]\n'
                'seed = [1, 7]\nstart = "fresh"\n[overrides]\n"device.nand.geometry.blocks_per_plane" = 512\n')
    table_path = os.path.join(SCRATCH, "table.json")
    out = cli("sweep", grid_path, "-q", "--json", table_path)
    assert out.returncode == 0, out.stderr
    with open(table_path) as f:
        table = json.load(f)
    pd.testing.assert_frame_equal(local.frame, pd.DataFrame(table["rows"], columns=table["columns"]))
    # A point that fails (a device too small for F2FS) is retried, then kept as a row.
    failing = dict(GRID, workload="gmail:launch", stack="default", seed=1,
                   overrides={"device.nand.geometry.blocks_per_plane": [64, 512]})
    for backend in ("local", "ray"):
        seen = []
        result = flashstack.sweep(failing, backend=backend, retries=2, progress=lambda *a: seen.append(a))
        assert len(result.failed) == 1 and "too small for F2FS" in result.failed[0]["error"], result.failed
        assert result.frame["error"].notna().sum() == 1 and len(seen) == 2
    ray.shutdown()
    print(f"sweep of 8 points: local {local_s:.2f} s, ray {ray_s:.2f} s (after ray.init)")


for check in [a_point_is_the_cli_json_for_the_same_seed, a_block_point_is_the_cli_json_and_sweeps_on_devices,
              errors_carry_the_cli_message, listings,
              bad_grids_fail_before_any_point_runs, sweeps_agree_local_ray_and_cli]:
    check()
    print(f"ok {check.__name__}")
