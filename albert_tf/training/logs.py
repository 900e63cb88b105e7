"""Training logs people read: CSV rows per logged step and a learning-curve PNG."""

import contextlib
import csv
import os
from typing import Dict, Optional, Sequence

import numpy as np

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
  plt = _pyplot()
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
  return _save(fig, png_path)


def _pyplot():
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def _save(fig, png_path: str) -> str:
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig.tight_layout()
  with atomic_path(png_path) as temporary:
    fig.savefig(temporary, dpi=100, format="png")
  plt.close(fig)
  return png_path


def plot_confusion_matrix(matrix, labels: Sequence[str], png_path: str, title: str) -> str:
  """`matrix` [C, C] (rows: the true label, columns: the predicted one) as a PNG, each cell
  with its count."""
  plt = _pyplot()
  size = min(12, 3 + 0.6 * len(labels))
  fig, ax = plt.subplots(figsize=(size + 1, size))
  image = ax.imshow(matrix, cmap="Blues")
  ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
  ax.set_yticks(range(len(labels)), labels)
  ax.set_xlabel("predicted")
  ax.set_ylabel("true")
  if len(labels) <= 30:
    top = max(1, matrix.max())
    for (i, j), count in np.ndenumerate(matrix):
      ax.text(j, i, str(count), ha="center", va="center",
              color="white" if count > top / 2 else "black", fontsize=8)
  fig.colorbar(image, ax=ax)
  ax.set_title(title)
  return _save(fig, png_path)


def plot_bars(values: Dict[str, float], png_path: str, title: str, xlabel: str) -> str:
  """One horizontal bar per name (e.g. each label's F1), in the order given."""
  plt = _pyplot()
  fig, ax = plt.subplots(figsize=(7, 1.5 + 0.3 * len(values)))
  names = list(values)
  ax.barh(range(len(names)), [values[n] for n in names], color="tab:blue")
  for i, name in enumerate(names):
    ax.text(min(values[name] + 0.01, 0.93), i, f"{values[name]:.3f}", va="center", fontsize=8)
  ax.set_yticks(range(len(names)), names)
  ax.invert_yaxis()
  ax.set_xlim(0, 1)
  ax.set_xlabel(xlabel)
  ax.grid(axis="x", alpha=0.3)
  ax.set_title(title)
  return _save(fig, png_path)


def plot_predicted_against_true(true, predicted, png_path: str, title: str) -> str:
  """A point per example, with the diagonal a perfect model would sit on."""
  plt = _pyplot()
  fig, ax = plt.subplots(figsize=(5, 5))
  ax.scatter(true, predicted, s=8, alpha=0.6)
  low, high = float(min(np.min(true), np.min(predicted))), float(max(np.max(true),
                                                                      np.max(predicted)))
  ax.plot([low, high], [low, high], "k--", linewidth=1)
  ax.set_xlabel("true")
  ax.set_ylabel("predicted")
  ax.grid(alpha=0.3)
  ax.set_title(title)
  return _save(fig, png_path)
