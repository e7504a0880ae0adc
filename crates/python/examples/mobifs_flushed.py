"""MobiFS's flushed-data figure (docs/mobifs-reproduction.md) as a sweep: ten apps on the
stock stack and on MobiFS, bytes F2FS wrote to the device, and the geometric mean of the
change. Run: python crates/python/examples/mobifs_flushed.py [OUT.png] [local|ray]"""

import math
import sys

import flashstack

APPS = ["gmail", "polish", "spotify", "telegram", "twitter", "wechat", "zoom",
        "facebook", "messenger", "chrome"]

# In [1]: the grid (20 points), each a factory-new phone with seed 1.
grid = {"workload": APPS, "stack": ["default", "mobifs"], "start": "fresh", "seed": 1}
backend = sys.argv[2] if len(sys.argv) > 2 else "local"
result = flashstack.sweep(grid, backend=backend, progress=False)
assert not result.failed, result.failed

# In [2]: one row per (app, stack); pivot the figure the paper plots.
df = result.frame
flushed = df.pivot(index="workload", columns="stack", values="device.host.write_bytes").loc[APPS]
flushed["change"] = flushed["mobifs"] / flushed["default"] - 1
print((flushed / [1e6, 1e6, 0.01]).round(1).rename(columns={"default": "baseline MB", "mobifs": "MobiFS MB", "change": "change %"}))
geomean = math.exp(sum(math.log(r) for r in flushed["mobifs"] / flushed["default"]) / len(APPS)) - 1
print(f"geometric mean change: {geomean:+.1%} (paper: -53.0%)")

# In [3]: the figure.
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ax = (flushed[["default", "mobifs"]] / 1e6).plot.bar(figsize=(8, 3.5), rot=30)
ax.set_ylabel("flushed data (MB)")
ax.set_xlabel("")
ax.set_title(f"MobiFS vs stock page cache: {geomean:+.1%} flushed (geometric mean)")
ax.legend(["baseline (default)", "MobiFS"])
plt.tight_layout()
plt.savefig(sys.argv[1] if len(sys.argv) > 1 else "mobifs-flushed.png", dpi=90)
