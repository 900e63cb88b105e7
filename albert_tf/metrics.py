"""Evaluation metrics, in NumPy: the GLUE ones (accuracy, F1, Matthews correlation,
Pearson and Spearman correlations), with the conventions of scikit-learn and SciPy."""

from typing import Dict, Optional, Sequence

import numpy as np


def accuracy(labels: Sequence[int], predictions: Sequence[int]) -> float:
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  return float(np.mean(labels == predictions)) if labels.size else 0.0


def f1(labels: Sequence[int], predictions: Sequence[int], positive: int = 1) -> float:
  """Binary F1 of the `positive` class (0 when there are no true positives)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  tp = np.sum((predictions == positive) & (labels == positive))
  fp = np.sum((predictions == positive) & (labels != positive))
  fn = np.sum((predictions != positive) & (labels == positive))
  return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0


def matthews_corrcoef(labels: Sequence[int], predictions: Sequence[int]) -> float:
  """Matthews correlation (multiclass form of Gorodkin 2004; binary = the usual phi)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  classes = np.union1d(labels, predictions)
  index = {c: i for i, c in enumerate(classes)}
  confusion = np.zeros((len(classes), len(classes)), np.float64)
  for y, p in zip(labels, predictions):
    confusion[index[y], index[p]] += 1
  t, p = confusion.sum(1), confusion.sum(0)            # true / predicted counts per class
  n, correct = confusion.sum(), np.trace(confusion)
  denominator = np.sqrt((n * n - p @ p) * (n * n - t @ t))
  return float((correct * n - t @ p) / denominator) if denominator else 0.0


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  x, y = x - x.mean(), y - y.mean()
  denominator = np.sqrt((x @ x) * (y @ y))
  return float(x @ y / denominator) if denominator else 0.0


def _ranks(values: np.ndarray) -> np.ndarray:
  """Ranks 1..n with ties given their average rank (as scipy.stats.rankdata)."""
  order = np.argsort(values, kind="mergesort")
  sorted_values = values[order]
  starts = np.r_[True, sorted_values[1:] != sorted_values[:-1]]
  group = np.cumsum(starts) - 1                        # tie group of each sorted item
  first = np.flatnonzero(starts)
  last = np.r_[first[1:], len(values)] - 1
  average = (first + last) / 2.0 + 1.0                 # mean rank of each group
  ranks = np.empty(len(values))
  ranks[order] = average[group]
  return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
  return pearson(_ranks(np.asarray(x, np.float64)), _ranks(np.asarray(y, np.float64)))


def glue_metrics(task_metric_names: Sequence[str], labels, predictions,
                 loss: Optional[float] = None) -> Dict[str, float]:
  """The named metrics (accuracy, f1, matthews_corrcoef, pearson, spearman) plus `loss`."""
  functions = dict(accuracy=accuracy, f1=f1, matthews_corrcoef=matthews_corrcoef,
                   pearson=pearson, spearman=spearman)
  result = {name: functions[name](labels, predictions) for name in task_metric_names}
  if loss is not None:
    result["loss"] = float(loss)
  return result
