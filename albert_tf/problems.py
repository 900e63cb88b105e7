"""What a classifier learns: one class per problem type, with transformers' names.

`SingleLabel`, `MultiLabel` and `Regression` hold everything that differs between the
three, so that no other module compares problem-type names:

- the training target of a row's label and how it is stored (`target`, `target_feature`);
- the loss, as transformers computes it (`per_example_loss`);
- the dev metrics, the one that picks the best checkpoint, the simplest baseline and the
  picture of the best checkpoint (`metrics`, `best_metric`, `baseline`, `picture`);
- an example's answer, from logits or from an export's outputs (`answer`,
  `answer_of_outputs`);
- what the exports return: the serving signature's outputs (`serving_outputs`), the TFLite
  signature's (`lite_outputs`), transformers' and KerasHub's activation (`activation`).

`Problem.of(type, labels)` is the problem a run records; `decide` finds it from the
training rows.
"""

import collections
import dataclasses
from typing import ClassVar, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.data.own import as_number, label_name
from albert_tf.training import logs, metrics as metrics_lib

SINGLE = "single_label_classification"
MULTI = "multi_label_classification"
REGRESSION = "regression"
AUTO = "auto"
POS_WEIGHT_CAP = 10.0   # --pos_weight=balanced: a label's weight at most (and at least 1/it)


@dataclasses.dataclass(frozen=True)
class Problem:
  """A problem with its labels (in id order; none for regression)."""
  labels: List[str]

  type: ClassVar[str] = ""
  best_metric: ClassVar[str] = ""
  activation: ClassVar[Optional[str]] = None  # transformers' / KerasHub's over the logits

  @staticmethod
  def of(problem_type: Optional[str], labels: Sequence[str] = ()) -> "Problem":
    """The problem of a recorded type name (None: single-label) and labels."""
    kind = TYPES.get(problem_type or SINGLE)
    if kind is None:
      raise ValueError(f"unknown problem type {problem_type!r}; one of {', '.join(TYPES)}")
    return kind(list(labels) if kind is not Regression else [])

  @staticmethod
  def of_glue(task) -> "Problem":
    """A GLUE task's problem (`albert_tf.data.glue.GlueTask`): STS-B's a regression, the
    others single-label."""
    return Regression([]) if task.is_regression else SingleLabel(list(task.labels))

  @staticmethod
  def of_outputs(labels: Optional[Sequence[str]], multi_label_threshold: Optional[float]
                 ) -> "Problem":
    """The problem of a serving export's arguments: no labels, a score; a multi-label
    threshold, multi-label; else single-label."""
    if labels is None:
      return Regression([])
    return (MultiLabel if multi_label_threshold is not None else SingleLabel)(list(labels))

  @property
  def num_outputs(self) -> int:
    """The model's outputs: one per label, or one score."""
    return len(self.labels)

  @property
  def export_labels(self) -> Optional[tuple]:
    """The label names an export returns (None: a score)."""
    return tuple(self.labels)

  def describe(self) -> str:
    shown = ", ".join(self.labels[:20]) + (", ..." if len(self.labels) > 20 else "")
    return f"{self.type}, {len(self.labels)} labels: {shown}"

  # -- data

  def _ids(self, label, where: str) -> List[int]:
    ids = {name: i for i, name in enumerate(self.labels)}
    names = label if isinstance(label, list) else [label_name(label)]
    unknown = [n for n in names if n not in ids]
    if unknown:
      raise ValueError(f"{where}: label {', '.join(map(repr, unknown))} is not among the "
                       f"training labels ({', '.join(self.labels[:20])}"
                       + (", ..." if len(self.labels) > 20 else "") + ")")
    return [ids[n] for n in names]

  def target(self, label, where: str):
    """A row's training target from its label as the file gives it; errors start with
    `where` (file:line)."""
    raise NotImplementedError

  def empty_target(self):
    """The target stored for a row without a label (a test file's)."""
    raise NotImplementedError

  def target_feature(self) -> tf.io.FixedLenFeature:
    """How a target is stored in the feature records."""
    raise NotImplementedError

  # -- training

  def per_example_loss(self, logits: tf.Tensor, labels: tf.Tensor,
                       weights: Optional[Sequence[float]] = None) -> Dict[str, tf.Tensor]:
    """`loss` [b] of logits [b, C] (what is optimized) and the logged metrics [b].
    `weights`: the loss weights of `loss_weights` (per class, or per label's positives)."""
    raise NotImplementedError

  def teacher_target(self, teacher: tf.Tensor) -> tf.Tensor:
    """A teacher's logits [b, C] as targets (`label_ids`' kind): its answer."""
    raise NotImplementedError

  def distillation_loss(self, logits: tf.Tensor, teacher: tf.Tensor,
                        temperature: float) -> tf.Tensor:
    """The loss [b] of a student's logits [b, C] against a teacher's [b, C] (soft labels at
    `temperature`, scaled by its square so that its gradient keeps its size, as Hinton et
    al. and DistilBERT do)."""
    raise NotImplementedError

  def label_counts(self, train: np.ndarray) -> np.ndarray:
    """Each label's rows [C] among the training targets (`survey`'s counts)."""
    del train
    return np.zeros([0], np.int64)

  def loss_weights(self, counts: np.ndarray, rows: int, how: str
                   ) -> Optional[Tuple[float, ...]]:
    """The loss's weights (`how`: "balanced") from each label's training rows [C] among
    `rows` (`survey`, `label_counts`), or None."""
    raise ValueError(f"{self.type}: no loss weights (--class_weight is single-label's, "
                     "--pos_weight multi-label's)")

  def metric_names(self) -> List[str]:
    """The dev metrics (besides per-label ones)."""
    raise NotImplementedError

  def metrics(self, targets: np.ndarray, logits: np.ndarray,
              threshold: float = 0.5) -> Dict[str, float]:
    """Dev metrics of `logits` [N, C] against the targets: `metric_names`, and precision,
    recall and F1 of each label (`precision/<label>`, ...)."""
    result = self._metrics(targets, logits, threshold)
    for name, values in zip(self.labels, result.pop("per_label", [])):
      for key, value in values.items():
        result[f"{key}/{name}"] = value
    return result

  def _metrics(self, targets, logits, threshold) -> Dict[str, object]:
    raise NotImplementedError

  def predictions(self, logits: np.ndarray) -> np.ndarray:
    """What a metric compares with the targets, of logits [N, C]: label ids [N] (the chosen
    labels [N, C] for multi-label), or scores [N]."""
    raise NotImplementedError

  def mean_loss(self, targets: np.ndarray, logits: np.ndarray) -> float:
    """The loss of logits [N, C] against the targets, averaged (as `per_example_loss`)."""
    raise NotImplementedError

  def submission(self, logits: np.ndarray) -> str:
    """One example's prediction as a GLUE submission file writes it, of logits [C]."""
    raise NotImplementedError

  def baseline(self, train: np.ndarray, dev: np.ndarray,
               threshold: float = 0.5) -> Dict[str, float]:
    """Dev metrics of the simplest guess from the training targets."""
    raise NotImplementedError

  def picture(self, targets: np.ndarray, logits: np.ndarray, threshold: float,
              png_path: str, title: str):
    """Draws the best checkpoint's dev results as `png_path`; returns what it drew."""
    raise NotImplementedError

  def not_learned(self, train: Optional[np.ndarray], dev: np.ndarray, logits: np.ndarray,
                  threshold: float = 0.5) -> Optional[str]:
    """What shows that dev logits [N, C] were learned from nothing (every answer alike, or
    no better than `baseline` of the training targets, when given); None if they were."""
    raise NotImplementedError

  # -- answers

  def answer(self, logits, threshold: float = 0.5) -> Dict[str, object]:
    """An example's answer from its logits [C]."""
    return self.answer_of_outputs(self.probabilities(np.asarray(logits, np.float64)),
                                  threshold)

  def probabilities(self, logits: np.ndarray) -> np.ndarray:
    """What an export returns of logits [..., C]: probabilities, or the score."""
    raise NotImplementedError

  def same_answers(self, reference, logits, threshold=0.5) -> Optional[str]:
    """None when logits [N, C] answer every row as `reference` [N, C] does (the label, or
    the label set at `threshold`), else the first row that differs and how (what
    `--dtype=auto` asks of bfloat16 against float32)."""
    for row, (want, got) in enumerate(zip(reference, logits)):
      want, got = self.answer(want, threshold), self.answer(got, threshold)
      want.pop("probabilities", None)
      got.pop("probabilities", None)
      if want != got:
        return f"row {row} of the batch answered {got} instead of {want}"
    return None

  def answer_of_outputs(self, outputs, threshold: float = 0.5) -> Dict[str, object]:
    """An example's answer from what an export returns: probabilities [C], or the score."""
    raise NotImplementedError

  def serving_outputs(self, logits: tf.Tensor, threshold: Optional[float]
                      ) -> Dict[str, tf.Tensor]:
    """The serving signature's outputs of logits [B, C]."""
    raise NotImplementedError

  def serving_threshold(self, threshold: float) -> Optional[float]:
    """The threshold a serving export applies (multi-label's), else None."""
    del threshold
    return None

  def lite_outputs(self, logits: tf.Tensor) -> Dict[str, tf.Tensor]:
    """The TFLite signature's outputs of logits [1, C]."""
    return {"probabilities": self.probabilities_tensor(logits)}

  def probabilities_tensor(self, logits: tf.Tensor) -> tf.Tensor:
    raise NotImplementedError


class SingleLabel(Problem):
  """One label of several per example: softmax cross-entropy; accuracy picks the best."""
  type = SINGLE
  best_metric = "accuracy"

  def target(self, label, where):
    if isinstance(label, list):
      raise ValueError(f"{where}: label {label!r} is a list, but the problem is single-label")
    return self._ids(label, where)[0]

  def empty_target(self):
    return 0

  def target_feature(self):
    return tf.io.FixedLenFeature([], tf.int64)

  def per_example_loss(self, logits, labels, weights=None):
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)      # [b]
    if weights is not None:      # each example's class weight
      loss *= tf.gather(tf.constant(weights, loss.dtype), labels)              # [b]
    correct = tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels)    # [b]
    return dict(loss=loss, accuracy=tf.cast(correct, tf.float32))

  def teacher_target(self, teacher):
    return tf.argmax(teacher, -1, output_type=tf.int32)                        # [b]

  def distillation_loss(self, logits, teacher, temperature):
    """T^2 KL(softmax(teacher / T) || softmax(logits / T))."""
    soft = tf.nn.log_softmax(teacher / temperature)                            # [b, C]
    kl = tf.reduce_sum(tf.exp(soft) * (soft - tf.nn.log_softmax(logits / temperature)), -1)
    return temperature ** 2 * kl                                               # [b]

  def metric_names(self):
    return ["accuracy", "macro_f1", "loss"] + (["f1"] if len(self.labels) == 2 else [])

  def label_counts(self, train):
    return np.bincount(np.asarray(train, np.int64), minlength=len(self.labels))   # [C]

  def loss_weights(self, counts, rows, how):
    """scikit-learn's class_weight="balanced": rows / (classes x the class's rows); a class
    without training rows gets 1."""
    weights = rows / (len(self.labels) * np.maximum(counts, 1))                   # [C]
    return tuple(float(w) if c else 1.0 for w, c in zip(weights, counts))

  def mean_loss(self, targets, logits):
    log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)    # [N, C]
    return float(-np.mean(log_probs[np.arange(len(targets)), targets]))

  def _metrics(self, targets, logits, threshold):
    result = metrics_lib.single_label_metrics(targets, logits.argmax(-1), len(self.labels))
    result["loss"] = self.mean_loss(targets, logits)
    return result

  def predictions(self, logits):
    return logits.argmax(-1)

  def submission(self, logits):
    return self.labels[int(np.argmax(logits))]

  def not_learned(self, train, dev, logits, threshold=0.5):
    chosen = logits.argmax(-1)
    if len(dev) > 1 and (chosen == chosen[0]).all():
      return f"every dev answer is {self.labels[int(chosen[0])]!r}"
    if train is None:
      return None
    accuracy, base = float(np.mean(chosen == dev)), self.baseline(train, dev)["accuracy"]
    if accuracy <= base:
      return f"dev accuracy {accuracy:.4f} is not above the majority baseline's {base:.4f}"
    return None

  def baseline(self, train, dev, threshold=0.5):
    """The majority class of the training rows."""
    majority = int(np.bincount(train, minlength=len(self.labels)).argmax())
    result = metrics_lib.single_label_metrics(dev, np.full(len(dev), majority),
                                              len(self.labels))
    return {k: v for k, v in result.items() if k != "per_label"}

  def picture(self, targets, logits, threshold, png_path, title):
    """The confusion matrix [C, C] (rows true, columns predicted)."""
    size = len(self.labels)
    drawn = np.bincount(targets * size + logits.argmax(-1),
                        minlength=size * size).reshape(size, size)                # [C, C]
    logs.plot_confusion_matrix(drawn, self.labels, png_path, f"{title}: confusion matrix")
    return drawn

  def probabilities(self, logits):
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)

  def answer_of_outputs(self, outputs, threshold=0.5):
    p = np.asarray(outputs, np.float64).reshape(-1)
    return dict(label=self.labels[int(p.argmax())],
                probabilities={name: float(v) for name, v in zip(self.labels, p)})

  def serving_outputs(self, logits, threshold):
    label_ids = tf.argmax(logits, -1, output_type=tf.int32)                   # [B]
    return {"probabilities": tf.nn.softmax(logits, axis=-1),                  # [B, C]
            "label_ids": label_ids,
            "labels": tf.gather(tf.constant(self.labels), label_ids)}         # [B]

  def probabilities_tensor(self, logits):
    return tf.nn.softmax(logits, axis=-1)


class MultiLabel(Problem):
  """Any number of labels per example: sigmoid cross-entropy averaged over examples x
  labels (transformers' BCEWithLogitsLoss); micro-F1 picks the best."""
  type = MULTI
  best_metric = "micro_f1"
  activation = "sigmoid"

  def target(self, label, where):
    hot = [0.0] * len(self.labels)
    for i in self._ids(label, where):
      hot[i] = 1.0
    return hot

  def empty_target(self):
    return [0.0] * len(self.labels)

  def target_feature(self):
    return tf.io.FixedLenFeature([len(self.labels)], tf.float32)

  def per_example_loss(self, logits, labels, weights=None):                   # labels [b, C]
    if weights is None:
      per_label = tf.nn.sigmoid_cross_entropy_with_logits(labels, logits)     # [b, C]
    else:     # torch's BCEWithLogitsLoss(pos_weight): each label's positives weighted
      per_label = tf.nn.weighted_cross_entropy_with_logits(
          labels, logits, tf.constant(weights, logits.dtype))                 # [b, C]
    exact = tf.reduce_all(tf.equal(logits > 0, labels > 0.5), axis=-1)        # [b]
    return dict(loss=tf.reduce_mean(per_label, -1), exact_match=tf.cast(exact, tf.float32))

  def teacher_target(self, teacher):
    return tf.cast(teacher > 0, tf.float32)                                   # [b, C]

  def distillation_loss(self, logits, teacher, temperature):
    """T^2 times each label's sigmoid cross-entropy against sigmoid(teacher / T), less
    its minimum (the teacher's entropy): 0 where the student answers as the teacher."""
    soft = tf.sigmoid(teacher / temperature)                                   # [b, C]
    per_label = (tf.nn.sigmoid_cross_entropy_with_logits(soft, logits / temperature)
                 - tf.nn.sigmoid_cross_entropy_with_logits(soft, teacher / temperature))
    return temperature ** 2 * tf.reduce_mean(per_label, -1)                    # [b]

  def metric_names(self):
    return ["micro_f1", "macro_f1", "exact_match", "loss"]

  def mean_loss(self, targets, logits):
    return float(np.mean(np.logaddexp(0, logits) - targets * logits))         # BCE

  def label_counts(self, train):
    return np.asarray(train, np.int64).sum(0)                                 # [C]

  def loss_weights(self, counts, rows, how):
    """Each label's negatives / positives in the training rows, at most POS_WEIGHT_CAP
    (1 for a label no row has)."""
    positives = np.asarray(counts, np.float64)                                # [C]
    negatives = rows - positives
    weights = np.where(positives > 0, negatives / np.maximum(positives, 1), 1.0)
    return tuple(float(w) for w in np.clip(weights, 1.0 / POS_WEIGHT_CAP, POS_WEIGHT_CAP))

  def tune_thresholds(self, targets: np.ndarray, logits: np.ndarray) -> Tuple[float, ...]:
    """Each label's threshold that maximizes its F1 on (dev) targets [N, C] and logits
    [N, C]: the candidates lie halfway between consecutive probabilities (and below and
    above them all); ties go to the one nearest 0.5; a label no row has keeps 0.5."""
    probabilities = self.probabilities(np.asarray(logits, np.float64))          # [N, C]
    truth = np.asarray(targets) > 0.5
    chosen = []
    for c in range(probabilities.shape[1]):
      p, positive = probabilities[:, c], truth[:, c]
      if not positive.any():
        chosen.append(0.5)
        continue
      values = np.unique(p)
      candidates = np.concatenate([[values[0] / 2], (values[:-1] + values[1:]) / 2,
                                   [(values[-1] + 1) / 2], [0.5]])               # [K]
      predicted = p[None, :] > candidates[:, None]                             # [K, N]
      tp = (predicted & positive).sum(1)
      f1 = 2 * tp / np.maximum(predicted.sum(1) + positive.sum(), 1)           # [K]
      best = np.flatnonzero(f1 >= f1.max() - 1e-12)
      chosen.append(float(candidates[best[np.argmin(np.abs(candidates[best] - 0.5))]]))
    return tuple(chosen)

  def _metrics(self, targets, logits, threshold):
    result = metrics_lib.multi_label_metrics(targets > 0.5,
                                             self.probabilities(logits) > np.asarray(threshold))
    result["loss"] = self.mean_loss(targets, logits)
    return result

  def predictions(self, logits):
    return self.probabilities(logits) > 0.5

  def not_learned(self, train, dev, logits, threshold=0.5):
    chosen = self.probabilities(logits) > np.asarray(threshold)                  # [N, C]
    if len(dev) > 1 and (chosen == chosen[:1]).all():
      names = [n for n, c in zip(self.labels, chosen[0]) if c]
      return f"every dev answer is the same labels ({', '.join(names) or 'none'})"
    if train is None:
      return None
    f1 = metrics_lib.multi_label_metrics(dev > 0.5, chosen)["micro_f1"]
    base = self.baseline(train, dev)["micro_f1"]
    if f1 <= base:
      return f"dev micro_f1 {f1:.4f} is not above the baseline's {base:.4f}"
    return None

  def baseline(self, train, dev, threshold=0.5):
    """The labels more than half of the training rows have (else the most frequent)."""
    frequency = train.mean(0)                                                 # [C]
    guess = frequency > 0.5
    if not guess.any():
      guess[frequency.argmax()] = True
    result = metrics_lib.multi_label_metrics(dev > 0.5, np.tile(guess, (len(dev), 1)))
    return {k: v for k, v in result.items() if k != "per_label"}

  def picture(self, targets, logits, threshold, png_path, title):
    """Each label's F1 {label: F1}."""
    per_label = metrics_lib.multi_label_metrics(
        targets > 0.5, self.probabilities(logits) > np.asarray(threshold))["per_label"]
    drawn = {name: values["f1"] for name, values in zip(self.labels, per_label)}
    at = "tuned thresholds" if np.ndim(threshold) else f"{threshold:g}"
    logs.plot_bars(drawn, png_path, f"{title}: F1 of each label at {at}", "F1")
    return drawn

  def probabilities(self, logits):
    return 1 / (1 + np.exp(-logits))

  def answer_of_outputs(self, outputs, threshold=0.5):
    p = np.asarray(outputs, np.float64).reshape(-1)
    over = p > np.broadcast_to(np.asarray(threshold, np.float64), p.shape)     # (per label)
    return dict(labels=[name for name, chosen in zip(self.labels, over) if chosen],
                probabilities={name: float(v) for name, v in zip(self.labels, p)})

  def serving_outputs(self, logits, threshold):
    probabilities = tf.sigmoid(logits)                                        # [B, C]
    chosen = probabilities > tf.constant(threshold, probabilities.dtype)      # [B, C]
    names = tf.broadcast_to(tf.constant(self.labels), tf.shape(chosen))       # [B, C]
    return {"probabilities": probabilities, "label_mask": chosen,
            "labels": tf.where(chosen, names, "")}                            # "" not chosen

  def serving_threshold(self, threshold):
    return threshold

  def probabilities_tensor(self, logits):
    return tf.sigmoid(logits)


# Regression's answers agree (bfloat16 against float32, `Regression.same_answers`) within
# this fraction of the scores' range.
SCORE_AGREEMENT = 0.02


class Regression(Problem):
  """One score per example: squared error; Pearson's r picks the best."""
  type = REGRESSION
  best_metric = "pearson"

  @property
  def num_outputs(self):
    return 1

  @property
  def export_labels(self):
    return None

  def describe(self):
    return "regression (one score)"

  def target(self, label, where):
    number = as_number(label)
    if number is None or isinstance(label, list):
      raise ValueError(f"{where}: regression label {label!r} is not a number")
    return number

  def empty_target(self):
    return 0.0

  def target_feature(self):
    return tf.io.FixedLenFeature([], tf.float32)

  def per_example_loss(self, logits, labels, weights=None):
    return dict(loss=tf.square(logits[:, 0] - labels))                        # [b]

  def teacher_target(self, teacher):
    return teacher[:, 0]                                                       # [b]

  def distillation_loss(self, logits, teacher, temperature):
    """The squared difference from the teacher's score (a score has no temperature)."""
    del temperature
    return tf.square(logits[:, 0] - teacher[:, 0])                            # [b]

  def metric_names(self):
    return ["pearson", "spearman", "mse"]

  def mean_loss(self, targets, logits):
    return float(np.mean((logits[:, 0] - targets) ** 2))

  def _metrics(self, targets, logits, threshold):
    scores = logits[:, 0]
    return dict(pearson=metrics_lib.pearson(scores, targets),
                spearman=metrics_lib.spearman(scores, targets),
                mse=self.mean_loss(targets, logits))

  def predictions(self, logits):
    return logits[:, 0]

  def submission(self, logits):
    return f"{float(logits[0]):.3f}"

  def not_learned(self, train, dev, logits, threshold=0.5):
    scores = logits[:, 0]
    if len(dev) > 1 and np.ptp(scores) <= 1e-6 * max(1.0, float(np.abs(scores).max())):
      return f"every dev score is {float(scores[0]):.4g}"
    if train is None:
      return None
    mse, base = float(np.mean((scores - dev) ** 2)), self.baseline(train, dev)["mse"]
    if mse >= base:
      return (f"dev mean squared error {mse:.4g} is not below the mean baseline's "
              f"{base:.4g}")
    return None

  def baseline(self, train, dev, threshold=0.5):
    """The training rows' mean score."""
    return dict(mse=float(np.mean((dev - train.mean()) ** 2)), pearson=0.0)

  def picture(self, targets, logits, threshold, png_path, title):
    """(true, predicted) scores."""
    drawn = (targets, logits[:, 0])
    logs.plot_predicted_against_true(*drawn, png_path, f"{title}: predicted against true")
    return drawn

  def probabilities(self, logits):
    return logits[..., :1]

  def answer_of_outputs(self, outputs, threshold=0.5):
    return dict(score=float(np.asarray(outputs, np.float64).reshape(-1)[0]))

  def same_answers(self, reference, logits, threshold=0.5):
    """Scores are the same answer within `SCORE_AGREEMENT` of the reference scores' range
    (at least 1): 0.1 on STS-B's 0-5."""
    want = np.asarray(reference, np.float64)[:, 0]
    got = np.asarray(logits, np.float64)[:, 0]
    tolerance = SCORE_AGREEMENT * max(1.0, float(np.ptp(want)))
    worst = int(np.argmax(np.abs(got - want)))
    if abs(got[worst] - want[worst]) > tolerance:
      return (f"row {worst} of the batch scored {got[worst]:.4g} instead of "
              f"{want[worst]:.4g} (more than {tolerance:.3g} apart)")
    return None

  def serving_outputs(self, logits, threshold):
    return {"score": logits[:, 0]}                                            # [B]

  def lite_outputs(self, logits):
    return {"score": logits[:, 0]}                                            # [1]


TYPES = {SINGLE: SingleLabel, MULTI: MultiLabel, REGRESSION: Regression}


# ----------------------------------------------------------------------------- deciding

def natural_order(names) -> List[str]:
  """Numbers by value (as their text), else strings in sorted order."""
  names = list(names)
  if names and all(as_number(n) is not None for n in names):
    return sorted(names, key=lambda n: (float(n), n))
  return sorted(names)


# More distinct numeric labels than this, while deciding between regression and classes,
# are not kept (a file of scores would keep every score).
NUMERIC_NAMES_KEPT = 10000


def decide(rows: Iterable, problem_type: str = AUTO, path: str = "the training file"
           ) -> Problem:
  """The problem of the training rows (each with `label` and `line`; read once, as they
  come): `problem_type`, or (auto) multi-label when the labels are lists, regression when
  they are all numbers and one is not an integer, else single-label. Labels are sorted
  naturally."""
  return survey(rows, problem_type, path)[0]


def survey(rows: Iterable, problem_type: str = AUTO, path: str = "the training file"
           ) -> Tuple[Problem, int, np.ndarray]:
  """`decide`'s problem, the number of rows and, in the same pass, each label's rows [C]
  (what `Problem.loss_weights` weighs by; zeros for regression)."""
  if problem_type != AUTO and problem_type not in TYPES:
    raise ValueError(f"--problem_type={problem_type}: choose one of "
                     f"{', '.join((AUTO,) + tuple(TYPES))}")
  fixed = TYPES.get(problem_type)
  first, names, numbers, fraction, too_many = None, set(), True, False, False
  counts, count = collections.Counter(), 0
  for r in rows:
    count += 1
    is_list = isinstance(r.label, list)
    if first is None:
      first = r
    elif is_list != isinstance(first.label, list):
      raise ValueError(f"{path}:{r.line}: label {r.label!r} is "
                       + ("a list" if is_list else "not a list")
                       + f", unlike line {first.line}'s {first.label!r}: list labels "
                       "(multi-label) and plain ones cannot be mixed")
    if fixed is Regression:
      fixed([]).target(r.label, f"{path}:{r.line}")           # checks that it is a number
      continue
    if fixed is SingleLabel and is_list:
      raise ValueError(f"{path}:{r.line}: label {r.label!r} is a list, but "
                       "--problem_type=single_label_classification takes one label a row")
    number = None if is_list else as_number(r.label)
    if number is None:
      numbers = False
    elif not number.is_integer():
      fraction = True
    if numbers and fixed is None and len(names) >= NUMERIC_NAMES_KEPT:
      too_many = True        # (scores, most likely: regression needs no names)
    else:
      found = r.label if is_list else [label_name(r.label)]
      names.update(found)
      counts.update(set(found))
  if first is None:
    raise ValueError(f"{path}: no rows in it")
  kind = fixed or (MultiLabel if isinstance(first.label, list) else
                   Regression if numbers and fraction else SingleLabel)
  if kind is not Regression and too_many:
    raise ValueError(f"{path}: more than {NUMERIC_NAMES_KEPT} different whole-number labels; "
                     "pass --problem_type=regression for scores, or fewer classes")
  problem = kind(natural_order(names) if kind is not Regression else [])
  return problem, count, np.array([counts[n] for n in problem.labels], np.int64)


def targets(rows: Sequence, problem: Problem, path: str = "") -> List:
  """Each row's training target; a label the problem lacks names its line."""
  return [problem.target(r.label, f"{path}:{r.line}") for r in rows]


def target_array(rows: Iterable, problem: Problem, path: str = "") -> np.ndarray:
  """Each row's target, as `targets`, read as the rows come into a compact array
  (`Targets`)."""
  collected = Targets(problem)
  for r in rows:
    collected.add(problem.target(r.label, f"{path}:{r.line}"))
  return collected.array()


class Targets:
  """Targets collected one at a time into a compact array: label ids [N] (int64), scores
  [N] (float64), or multi-label 0/1 rows [N, C] (int8)."""
  BLOCK = 65536

  def __init__(self, problem: Problem):
    self.dtype = {MULTI: np.int8, REGRESSION: np.float64}.get(problem.type, np.int64)
    self.empty = np.zeros([0, len(problem.labels)] if problem.type == MULTI else [0],
                          self.dtype)
    self.parts, self.block = [], []

  def add(self, target) -> None:
    self.block.append(target)
    if len(self.block) == self.BLOCK:
      self.parts.append(np.array(self.block, self.dtype))
      self.block = []

  def array(self) -> np.ndarray:
    blocks = self.parts + ([np.array(self.block, self.dtype)] if self.block else [])
    return np.concatenate(blocks) if blocks else self.empty
