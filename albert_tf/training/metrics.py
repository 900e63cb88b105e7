"""Evaluation metrics: the GLUE ones in NumPy (accuracy, F1, Matthews correlation,
Pearson and Spearman correlations, with the conventions of scikit-learn and
SciPy) and SQuAD's exact match and F1 with the semantics of the official
evaluate-v1.1.py and evaluate-v2.0.py scripts."""

import collections
import re
import string
import sys
from typing import Dict, List, Mapping, Optional, Sequence

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


def _precision_recall_f1(tp, fp, fn) -> Dict[str, float]:
  precision = tp / (tp + fp) if tp + fp else 0.0
  recall = tp / (tp + fn) if tp + fn else 0.0
  return dict(precision=float(precision), recall=float(recall),
              f1=float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0)


def single_label_metrics(labels: Sequence[int], predictions: Sequence[int],
                         num_classes: int) -> Dict[str, object]:
  """accuracy, macro_f1 (the mean of every class's F1, as scikit-learn's average="macro"),
  f1 (of class 1, with two classes) and `per_label`: each class's precision, recall, F1."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  per_label = [_precision_recall_f1(np.sum((predictions == c) & (labels == c)),
                                    np.sum((predictions == c) & (labels != c)),
                                    np.sum((predictions != c) & (labels == c)))
               for c in range(num_classes)]
  result = dict(accuracy=accuracy(labels, predictions),
                macro_f1=float(np.mean([p["f1"] for p in per_label])))
  if num_classes == 2:
    result["f1"] = per_label[1]["f1"]
  result["per_label"] = per_label
  return result


def multi_label_metrics(truth: np.ndarray, chosen: np.ndarray) -> Dict[str, object]:
  """Of boolean [N, C] label sets: micro_f1 (over every example x label), macro_f1 (the mean
  of the labels' F1), exact_match (the share of examples whose set is exactly right) and
  `per_label`: each label's precision, recall and F1."""
  truth, chosen = np.asarray(truth, bool), np.asarray(chosen, bool)
  tp = np.sum(truth & chosen, 0)                                              # [C]
  fp = np.sum(~truth & chosen, 0)
  fn = np.sum(truth & ~chosen, 0)
  per_label = [_precision_recall_f1(*counts) for counts in zip(tp, fp, fn)]
  return dict(micro_f1=_precision_recall_f1(tp.sum(), fp.sum(), fn.sum())["f1"],
              macro_f1=float(np.mean([p["f1"] for p in per_label])),
              exact_match=float(np.mean(np.all(truth == chosen, -1))), per_label=per_label)


# ----------------------------------------------------------------------------- SQuAD

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
  """The official normalization: lower-case, drop ASCII punctuation and the articles
  a/an/the, collapse whitespace."""
  s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
  return " ".join(_ARTICLES.sub(" ", s).split())


def squad_exact(prediction: str, gold: str) -> int:
  return int(normalize_answer(prediction) == normalize_answer(gold))


def squad_f1(prediction: str, gold: str, version_2: bool = True) -> float:
  """Token-overlap F1 of normalized answers. In v2.0 an empty answer on either
  side scores 1 if both are empty, else 0; v1.1 scores it 0."""
  pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
  if version_2 and (not pred_tokens or not gold_tokens):
    return float(pred_tokens == gold_tokens)
  common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
  same = sum(common.values())
  if same == 0:
    return 0.0
  precision, recall = same / len(pred_tokens), same / len(gold_tokens)
  return 2 * precision * recall / (precision + recall)


def _questions(dataset: Sequence[dict]):
  for article in dataset:
    for paragraph in article["paragraphs"]:
      yield from paragraph["qas"]


def squad_v1_evaluate(dataset: Sequence[dict], predictions: Mapping[str, str]) -> Dict[str, float]:
  """evaluate-v1.1.py: EM and F1 (percent), the max over each question's gold answers.

  Args:
    dataset: the `data` list of a SQuAD JSON file.
    predictions: question id -> answer text; a question without one scores 0.
  """
  exact = f1 = total = 0
  for qa in _questions(dataset):
    total += 1
    if qa["id"] not in predictions:
      print(f"Unanswered question {qa['id']} will receive score 0.", file=sys.stderr)
      continue
    golds = [a["text"] for a in qa["answers"]]
    prediction = predictions[qa["id"]]
    exact += max(squad_exact(prediction, g) for g in golds)
    f1 += max(squad_f1(prediction, g, version_2=False) for g in golds)
  return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def _best_threshold(predictions, scores, na_probs, has_answer):
  """The official find_best_thresh: abstain on every question whose na_prob is above t."""
  score = best = sum(1 for has in has_answer.values() if not has)
  threshold = 0.0
  for qid in sorted(na_probs, key=lambda k: na_probs[k]):
    if qid not in scores:
      continue
    if has_answer[qid]:
      score += scores[qid]
    elif predictions[qid]:
      score -= 1
    if score > best:
      best, threshold = score, na_probs[qid]
  return 100.0 * best / len(scores), threshold


def squad_v2_evaluate(dataset: Sequence[dict], predictions: Mapping[str, str],
                      na_probs: Optional[Mapping[str, float]] = None,
                      na_prob_thresh: float = 1.0) -> Dict[str, float]:
  """evaluate-v2.0.py [--na-prob-file na_probs --na-prob-thresh na_prob_thresh].

  A question whose na_prob is above `na_prob_thresh` counts as answered with
  no answer. Returns exact, f1, total, the HasAns_/NoAns_ breakdown and, when
  `na_probs` is given, best_exact / best_f1 with the thresholds reaching them.
  Questions without a prediction are left out (the official script does so
  for the overall figures).
  """
  has_answer, exact_raw, f1_raw = {}, {}, {}
  for qa in _questions(dataset):
    qid = qa["id"]
    has_answer[qid] = bool(qa["answers"])
    golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
    if qid not in predictions:
      print(f"Missing prediction for {qid}", file=sys.stderr)
      continue
    exact_raw[qid] = max(squad_exact(predictions[qid], g) for g in golds)
    f1_raw[qid] = max(squad_f1(predictions[qid], g) for g in golds)
  probs = na_probs if na_probs is not None else {k: 0.0 for k in predictions}

  def thresholded(raw):
    return {qid: float(not has_answer[qid]) if probs[qid] > na_prob_thresh else s
            for qid, s in raw.items()}

  exact, f1 = thresholded(exact_raw), thresholded(f1_raw)

  def summary(qids: List[str]):
    return {"exact": 100.0 * sum(exact[q] for q in qids) / len(qids),
            "f1": 100.0 * sum(f1[q] for q in qids) / len(qids), "total": len(qids)}

  result = summary(list(exact))
  for prefix, wanted in (("HasAns", True), ("NoAns", False)):
    qids = [q for q, has in has_answer.items() if has == wanted and q in exact]
    if qids:
      result.update({f"{prefix}_{k}": v for k, v in summary(qids).items()})
  if na_probs is not None:
    result["best_exact"], result["best_exact_thresh"] = _best_threshold(
        predictions, exact_raw, na_probs, has_answer)
    result["best_f1"], result["best_f1_thresh"] = _best_threshold(
        predictions, f1_raw, na_probs, has_answer)
  return result
