"""Training logs people read: CSV rows per logged step and a learning-curve PNG."""

import contextlib
import csv
import os
from typing import Dict, Optional

from albert_tf.files import atomic_open, atomic_path, writing


def append_csv(path: str, step: int, metrics: Dict[str, float]) -> None:
  """Appends one row (step + metrics) to a CSV log, writing the header first if new."""
  new = not os.path.exists(path)
  size = 0 if new else os.path.getsize(path)
  with writing(path):
    try:
      with open(path, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
          writer.writerow(["step"] + list(metrics))
        writer.writerow([step] + [f"{v:.8g}" for v in metrics.values()])
    except OSError:   # no half-written row: the file as it was
      with contextlib.suppress(OSError):
        with open(path, "r+") as f:
          f.truncate(size)
      raise


def drop_rows_after(path: str, step: int) -> int:
  """Removes the rows of a CSV log past `step` (steps a resumed run redoes); returns
  how many were removed."""
  rows = read_csv(path)
  kept = [r for r in rows if int(r["step"]) <= step]
  if len(kept) < len(rows):
    with atomic_open(path, "w", newline="") as f:
      writer = csv.DictWriter(f, fieldnames=list(rows[0]))
      writer.writeheader()
      writer.writerows(kept)
  return len(rows) - len(kept)


def read_csv(path: str):
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return list(csv.DictReader(f))


_NOT_PLOTTED = ("learning_rate", "examples_per_second", "global_step")


def plot_learning_curve(csv_path: str, png_path: str,
                        eval_csv_path: Optional[str] = None) -> Optional[str]:
  """Losses (left) and accuracy-like metrics (right) per step, as a PNG.

  Training rows come from `csv_path`; rows of `eval_csv_path` (one per
  evaluated checkpoint) are drawn with markers and a `dev ` prefix.
  """
  rows = read_csv(csv_path)
  if not rows:
    return None
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
  dev = read_csv(eval_csv_path) if eval_csv_path else []
  for prefix, table, style in (("train " if dev else "", rows, "-"), ("dev ", dev, "o-")):
    if not table:
      continue
    steps = [int(r["step"]) for r in table]
    for key in table[0]:
      if key == "step" or key in _NOT_PLOTTED:
        continue
      ax = ax1 if key.endswith("loss") else ax2
      ax.plot(steps, [float(r[key]) for r in table], style, label=prefix + key, markersize=3)
  for ax, title in ((ax1, "loss"), (ax2, "accuracy and other metrics")):
    ax.set_xlabel("step")
    ax.set_title(title)
    if ax.lines:
      ax.legend()
    ax.grid(alpha=0.3)
  fig.tight_layout()
  with atomic_path(png_path) as temporary:
    fig.savefig(temporary, dpi=100, format="png")
  plt.close(fig)
  return png_path
