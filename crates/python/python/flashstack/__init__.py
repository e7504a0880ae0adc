"""flashstack from Python: whole-stack runs and parameter sweeps (docs/python.md).

Every run goes through the Rust crates (``flashstack_sweep``), the code ``flashstack run``
and ``flashstack sweep`` call: a point's report is the CLI's JSON byte for byte.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from . import _native
from ._native import FlashstackError, GridError

__all__ = [
    "run",
    "sweep",
    "Result",
    "SweepResult",
    "FlashstackError",
    "GridError",
    "stack_presets",
    "device_presets",
    "personas",
    "stack_toml",
]

_EXTENSION = _native.__file__


def _point_json(workload: str, stack: str, seed: int, overrides: Optional[Mapping[str, Any]], start: str,
                device: Optional[str] = None, contents: bool = False) -> str:
    entries = [f"{key}={_override_text(value)}" for key, value in (overrides or {}).items()]
    point = {"workload": workload, "stack": stack, "seed": int(seed), "overrides": entries, "start": start}
    if device is not None:
        point = {"workload": workload, "device": device, "seed": int(seed), "overrides": entries,
                 "contents": bool(contents)}
    return json.dumps(point)


def _override_text(value: Any) -> str:
    # As `+key=value` on the command line: booleans in TOML's spelling.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class Result:
    """One run's report. ``json`` is exactly what ``flashstack run --json`` writes for the
    same arguments; ``data`` the same as Python values (dicts, lists, numbers, strings)."""

    json: str
    data: Dict[str, Any] = field(repr=False)

    def __getattr__(self, name: str) -> Any:
        # Top-level report fields as attributes: result.device, result.energy, ...
        try:
            return self.__dict__["data"][name]
        except KeyError:
            raise AttributeError(name) from None

    def to_pandas(self, what: str = "timeline"):
        """A DataFrame of the run's series: ``"timeline"`` (one row per sample of the
        stack's state over simulated time), ``"user_ops"`` (one row per kind of user
        operation, with its latency summary) or ``"file_ops"`` (one row per file call)."""
        import pandas as pd

        if what == "timeline":
            return pd.DataFrame(self.data["timeline"]["samples"])
        if what == "user_ops":
            rows = [{k: v for k, v in op.items() if k != "cdf"} for op in self.data["user_ops"]]
            return pd.DataFrame(rows)
        if what == "file_ops":
            return pd.DataFrame.from_dict(self.data["file_ops"], orient="index")
        raise ValueError(f"to_pandas: unknown series {what!r} (timeline, user_ops, file_ops)")

    def to_arrow(self, what: str = "timeline"):
        """``to_pandas(what)`` as a pyarrow Table."""
        import pyarrow as pa

        return pa.Table.from_pandas(self.to_pandas(what), preserve_index=False)


def run(
    workload: str = "mix",
    stack: str = "default",
    seed: int = 1,
    overrides: Optional[Mapping[str, Any]] = None,
    start: str = "builtin",
    device: Optional[str] = None,
    contents: bool = False,
) -> Result:
    """Runs a persona or file-level trace on a whole stack, as ``flashstack run --workload
    WORKLOAD --stack STACK+key=value... --seed SEED`` (``start="fresh"``: ``--fresh``; a
    path: ``--phone PATH``). With ``device``, a block-level run instead: ``flashstack run
    --device DEVICE+key=value... --workload ldc:APP`` (``workload="synthetic"`` or
    ``"synthetic:SPEC"``: ``--synthetic``; ``contents=True``: ``--contents``, which
    compressing devices need); ``stack`` and ``start`` are then unused. Raises
    FlashstackError with the CLI's message."""
    point = _point_json(workload, stack, seed, overrides, start, device, contents)
    text = _native.run_json(point, _EXTENSION)
    return Result(json=text, data=json.loads(text))


def stack_presets() -> Dict[str, str]:
    """Stack presets: name -> description."""
    return dict(_native.stack_presets())


def device_presets() -> Dict[str, str]:
    """Device presets: name -> description."""
    return dict(_native.device_presets())


def personas() -> Dict[str, str]:
    """App personas: name -> description."""
    return {name: description for name, description, _ in _native.personas()}


def stack_toml(spec: str) -> str:
    """A stack specification's whole configuration as TOML."""
    return _native.stack_toml(spec)


@dataclass
class SweepResult:
    """A sweep's table (a column per parameter, ``error``, then every scalar figure) and
    the points that failed after their retries."""

    frame: Any
    failed: List[Dict[str, Any]]

    def to_pandas(self):
        return self.frame


def _run_point(point_json: str, extension: str):
    """One attempt at a point: (report JSON, None) or (None, error message)."""
    try:
        return _native.run_json(point_json, extension), None
    except FlashstackError as error:
        return None, str(error)


def _progress_printer(stream=sys.stderr) -> Callable[[int, int, Dict[str, Any], Optional[str]], None]:
    def show(done: int, total: int, point: Dict[str, Any], error: Optional[str]) -> None:
        status = "ok" if error is None else f"failed: {error}"
        target = point.get("device") or point["stack"]
        print(f"[{done}/{total}] {point['workload']} on {target} seed {point['seed']}: {status}", file=stream)

    return show


def sweep(
    grid: Mapping[str, Any],
    backend: str = "local",
    retries: int = 1,
    progress: Any = True,
    jobs: Optional[int] = None,
) -> SweepResult:
    """Runs the cartesian product of ``grid`` (keys workload, stack, seed, start and an
    ``overrides`` dict of stack fields; each a value or a list; ``device`` in place of
    ``stack`` and ``start``, and ``contents``, for block-level points) and gathers one DataFrame,
    the same table ``flashstack sweep --json`` writes. A bad grid raises GridError before
    anything runs. A failed point is tried ``retries`` more times, then kept as a row with
    its error and listed in ``failed``. ``backend="ray"``: each point a Ray task on the
    cluster ``ray.init`` connected to (its workers need this package installed); started
    on this machine's cores if Ray is not initialised. ``progress``: True prints a line per
    point to stderr, a callable gets (done, total, point, error)."""
    import pandas as pd

    grid_json = json.dumps(grid)
    points = _native.expand(grid_json, "grid")
    show = _progress_printer() if progress is True else (progress or (lambda *a: None))
    if backend == "local":
        outcomes = _sweep_local(points, retries, show, jobs)
    elif backend == "ray":
        outcomes = _sweep_ray(points, retries, show)
    else:
        raise ValueError(f"sweep: unknown backend {backend!r} (local, ray)")
    reports = [o[0] for o in outcomes]
    errors = [o[1] for o in outcomes]
    attempts = [o[2] for o in outcomes]
    table = json.loads(_native.table_json(grid_json, "grid", points, reports, errors, attempts))
    frame = pd.DataFrame(table["rows"], columns=table["columns"])
    failed = [dict(json.loads(p), error=e) for p, e in zip(points, errors) if e is not None]
    return SweepResult(frame=frame, failed=failed)


def _sweep_local(points: List[str], retries: int, show, jobs: Optional[int]):
    from concurrent.futures import ThreadPoolExecutor

    # Runs release the GIL: threads run points in parallel.
    workers = jobs or os.cpu_count() or 1
    outcomes: List[Any] = [None] * len(points)
    done = 0

    def attempt(i: int):
        for n in range(1, retries + 2):
            report, error = _run_point(points[i], _EXTENSION)
            if error is None:
                break
        return i, report, error, n

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for i, report, error, n in pool.map(attempt, range(len(points))):
            outcomes[i] = (report, error, n)
            done += 1
            show(done, len(points), json.loads(points[i]), error)
    return outcomes


def _sweep_ray(points: List[str], retries: int, show):
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    # A task that raises (a worker lost) is retried by Ray; a point that fails is retried
    # here, so both kinds of failure end as a row.
    task = ray.remote(max_retries=retries)(_ray_point)
    attempts = [1] * len(points)
    pending = {task.remote(p): i for i, p in enumerate(points)}
    outcomes: List[Any] = [None] * len(points)
    done = 0
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        ref = ready[0]
        i = pending.pop(ref)
        try:
            report, error = ray.get(ref)
        except Exception as lost:  # the task itself failed (worker died, package missing)
            report, error = None, f"ray task failed: {lost}"
        if error is not None and attempts[i] <= retries:
            attempts[i] += 1
            pending[task.remote(points[i])] = i
            continue
        outcomes[i] = (report, error, attempts[i])
        done += 1
        show(done, len(points), json.loads(points[i]), error)
    return outcomes


def _ray_point(point_json: str):
    # On a worker: this package's own extension there.
    from flashstack import _native as native

    return _run_point(point_json, native.__file__)
