"""albert_tf against transformers itself, both ways (needs the [bench] extra: torch, transformers).

1. transformers -> albert_tf: AlbertModel, AlbertForPreTraining,
   AlbertForSequenceClassification and AlbertForTokenClassification with grouped sharing (L=5, G=2, inner
   groups 2), random weights (LayerNorms too), saved with `save_pretrained`
   (safetensors), read by `albert_tf.build_hf_model`; for each hidden_act
   (gelu_new, gelu, relu) the largest difference of every output.
2. albert_tf -> transformers: the same kinds of albert_tf models written by
   `albert_tf.save_hf_model`, loaded with `from_pretrained`.
3. With --classifier_run=DIR (a run_classifier.py --output_dir, e.g. the demo's),
   the run converted by convert_checkpoint.py --output_format=hf and loaded with
   AlbertForSequenceClassification + AlbertTokenizer / BertTokenizer: the
   largest difference of the class probabilities on its dev examples, texts
   tokenized by each side's own tokenizer.

  python benchmarks/parity_huggingface.py [--classifier_run=out/MRPC --data_dir=glue_data/MRPC]
"""

import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from absl import app, flags
import numpy as np
import tensorflow as tf
import tf_keras as keras

import albert_tf
from common import GROUPED, random_inputs

flags.DEFINE_string("classifier_run", None, "A run_classifier.py --output_dir to convert and "
                    "compare on its dev examples.")
flags.DEFINE_string("data_dir", None, "--classifier_run: the task's GLUE directory (its "
                    "dev.tsv).")
flags.DEFINE_integer("dev_examples", 64, "--classifier_run: dev examples to compare.")
FLAGS = flags.FLAGS

TOLERANCE = 1e-5


def _torch():
  try:
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError:
    sys.exit("needs torch and transformers: pip install -e '.[bench]'")
  return torch, transformers


def _diff(a, b) -> float:
  return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def _hf_config(transformers, hidden_act, num_labels=2):
  c = GROUPED
  return transformers.AlbertConfig(
      vocab_size=c["vocab_size"], embedding_size=c["embedding_size"],
      hidden_size=c["hidden_size"], num_hidden_layers=c["num_hidden_layers"],
      num_hidden_groups=c["num_hidden_groups"], inner_group_num=c["inner_group_num"],
      num_attention_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
      max_position_embeddings=c["max_position_embeddings"], hidden_act=hidden_act,
      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=num_labels,
      classifier_dropout_prob=0.0)


def _hf_outputs(torch, model, x):
  """transformers' outputs as NumPy, named as albert_tf names them."""
  feed = dict(input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
              attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
              token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long))
  with torch.no_grad():
    out = model(**feed, output_hidden_states=True)
  got = {}
  if hasattr(out, "last_hidden_state"):
    got["sequence_output"] = out.last_hidden_state
    got["pooled_output"] = out.pooler_output
  if hasattr(out, "prediction_logits"):
    got["mlm_logits"] = out.prediction_logits
    got["sop_logits"] = out.sop_logits
    got["sequence_output"] = out.hidden_states[-1]
  elif hasattr(out, "logits"):
    got["logits"] = out.logits
  return {k: v.numpy() for k, v in got.items()}


def _tf_outputs(model, x):
  """albert_tf's outputs; the masked-LM logits at every position, as transformers gives them."""
  seq = x["input_word_ids"].shape[1]
  inputs = {k: tf.constant(v) for k, v in x.items() if k != "masked_lm_positions"}
  if isinstance(model, albert_tf.AlbertClassifier):
    return dict(logits=model(inputs).numpy())
  if isinstance(model, albert_tf.AlbertPretrainer):
    inputs["masked_lm_positions"] = tf.tile(tf.range(seq)[tf.newaxis], [x["input_word_ids"].shape[0], 1])
  out = model(inputs)
  return {k: out[k].numpy() for k in ("sequence_output", "pooled_output", "mlm_logits",
                                      "sop_logits") if k in out}


def _randomize(torch, model, seed):
  """Every parameter drawn at random (LayerNorm gains and biases too), so each tensor counts."""
  generator = torch.Generator().manual_seed(seed)
  with torch.no_grad():
    for _, p in sorted(model.named_parameters()):
      p.copy_(torch.randn(p.shape, generator=generator) * 0.2 + (1.0 if p.dim() == 1 and
                                                                  "LayerNorm.weight" in _ else 0))


def transformers_to_albert_tf(torch, transformers, tmp):
  print("transformers save_pretrained -> albert_tf.build_hf_model, max |diff| "
        f"(grouped: L=5, G=2, inner=2; tolerance {TOLERANCE:g}):")
  worst = 0.0
  x = random_inputs(GROUPED, batch=3, seq=16)
  for act in ("gelu_new", "gelu", "relu"):
    for cls in (transformers.AlbertModel, transformers.AlbertForPreTraining,
                transformers.AlbertForSequenceClassification,
                transformers.AlbertForTokenClassification):
      torch.manual_seed(0)
      hf_model = cls(_hf_config(transformers, act)).eval()
      _randomize(torch, hf_model, seed=len(act))
      path = os.path.join(tmp, f"tr_{cls.__name__}_{act}")
      hf_model.save_pretrained(path, safe_serialization=True)
      model, report = albert_tf.build_hf_model(path)
      want, got = _hf_outputs(torch, hf_model, x), _tf_outputs(model, x)
      diffs = {k: _diff(got[k], want[k]) for k in want}
      worst = max(worst, *diffs.values())
      print(f"  {act:9s} {cls.__name__:33s} -> {type(model).__name__:18s} "
            + "  ".join(f"{k} {v:.1e}" for k, v in diffs.items())
            + f"  ({len(report.loaded)} tensors)")
  return worst


def albert_tf_to_transformers(torch, transformers, tmp):
  print("albert_tf.save_hf_model -> transformers from_pretrained, max |diff|:")
  worst = 0.0
  x = random_inputs(GROUPED, batch=3, seq=16)
  for act in ("gelu", "gelu_exact", "relu"):
    cfg = albert_tf.AlbertConfig.from_dict(dict(GROUPED, hidden_act=act))
    for build, cls in ((lambda: albert_tf.AlbertEncoder(cfg), transformers.AlbertModel),
                       (lambda: albert_tf.AlbertPretrainer(cfg), transformers.AlbertForPreTraining),
                       (lambda: albert_tf.AlbertClassifier(cfg, 3),
                        transformers.AlbertForSequenceClassification),
                       (lambda: albert_tf.AlbertTokenClassifier(cfg, 3),
                        transformers.AlbertForTokenClassification)):
      keras.utils.set_random_seed(1)
      model = build()
      for v in model.variables:   # random everywhere, as above
        v.assign(tf.random.normal(v.shape, stddev=0.2) + (1.0 if "gamma" in v.name else 0.0))
      path = os.path.join(tmp, f"tf_{cls.__name__}_{act}")
      albert_tf.save_hf_model(model, path, labels=["a", "b", "c"] if cls.__name__.endswith(
          "Classification") else None)
      hf_model = cls.from_pretrained(path).eval()
      want, got = _hf_outputs(torch, hf_model, x), _tf_outputs(model, x)
      diffs = {k: _diff(got[k], want[k]) for k in want}
      worst = max(worst, *diffs.values())
      print(f"  {act:10s} {type(model).__name__:18s} -> {cls.__name__:33s} "
            + "  ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
  return worst


def classifier_run(torch, transformers, run_dir, data_dir, tmp, count):
  from albert_tf.data import glue  # pylint: disable=g-import-not-at-top
  from albert_tf import sources  # pylint: disable=g-import-not-at-top
  out = os.path.join(tmp, "hf_run")
  subprocess.run([sys.executable, os.path.join(ROOT, "convert_checkpoint.py"),
                  f"--input={run_dir}", "--output_format=hf", f"--output_dir={out}"], check=True)
  source = sources.read(run_dir)
  examples = glue.read_examples(data_dir, source.task, source.task.dev_splits[0])[:count]
  hf_model = transformers.AlbertForSequenceClassification.from_pretrained(out).eval()
  tokenizer = transformers.AutoTokenizer.from_pretrained(out, use_fast=False)
  model = source.model
  seq = source.max_seq_length
  texts = [(e.text_a, e.text_b) if e.text_b is not None else (e.text_a,) for e in examples]
  enc = tokenizer(*zip(*texts), padding="max_length", truncation="longest_first", max_length=seq,
                  return_tensors="pt")
  features = list(glue.convert_examples(examples, source.task, source.tokenizer, seq))
  inputs = {name: np.array([f[key] for f in features], np.int32) for name, key in
            (("input_word_ids", "input_ids"), ("input_mask", "input_mask"),
             ("input_type_ids", "segment_ids"))}
  got = tf.nn.softmax(model({k: tf.constant(v) for k, v in inputs.items()}), -1).numpy()
  with torch.no_grad():   # the model on the same ids: the conversion's parity
    want = torch.softmax(hf_model(**{k: torch.tensor(v, dtype=torch.long) for k, v in zip(
        ("input_ids", "attention_mask", "token_type_ids"), inputs.values())}).logits, -1).numpy()
  diff = _diff(got, want)
  same = np.all(enc["input_ids"].numpy() == inputs["input_word_ids"], 1)
  print(f"run_classifier.py run {run_dir} ({source.task.name}) -> convert_checkpoint.py "
        f"--output_format=hf -> AlbertForSequenceClassification.from_pretrained: "
        f"{len(examples)} dev examples, max |diff| of the class probabilities {diff:.1e} "
        f"(albert_tf's ids into both)")
  print(f"  transformers' own {type(tokenizer).__name__} gives albert_tf's ids for "
        f"{same.mean():.0%} of them" + (
            "" if same.all() else " (it cuts SentencePiece's user-defined symbols, such as "
            "( ) \" - . out of the text before SentencePiece sees it; the original does not)"))
  return diff


def main(argv):
  del argv
  from absl import logging  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)
  torch, transformers = _torch()
  transformers.logging.set_verbosity_error()
  transformers.utils.logging.disable_progress_bar()
  torch.set_num_threads(1)
  print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"TensorFlow {tf.__version__}")
  tmp = tempfile.mkdtemp()
  worst = max(transformers_to_albert_tf(torch, transformers, tmp),
              albert_tf_to_transformers(torch, transformers, tmp))
  if FLAGS.classifier_run:
    if not FLAGS.data_dir:
      sys.exit("--classifier_run needs --data_dir (the task's GLUE directory)")
    worst = max(worst, classifier_run(torch, transformers, FLAGS.classifier_run, FLAGS.data_dir,
                                      tmp, FLAGS.dev_examples))
  print(f"largest difference {worst:.1e}: {'within' if worst <= TOLERANCE else 'OVER'} "
        f"{TOLERANCE:g}")
  return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
  app.run(main)
