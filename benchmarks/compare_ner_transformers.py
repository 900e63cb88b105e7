"""run_ner.py's fine-tuning against transformers' AlbertForTokenClassification from the same
weights, the same windows and the same steps (needs the [bench] extra: torch, transformers).

1. An AlbertTokenClassifier with random weights (seeded), written as a Hugging Face
   directory (`save_hf_model`): both sides start from it.
2. albert_tf: `run_ner.py`'s task with `--albert_directory` on that directory.
3. transformers: `AlbertForTokenClassification.from_pretrained` on it, trained on the very
   windows run_ner.py trains on (albert_tf's tokenization; ignored positions -100) with
   torch's AdamW (weight decay 0.01 but on LayerNorm and biases, epsilon 1e-6), linear
   warmup and decay to 0, gradients clipped to norm 1.0, the batches in a seeded order.
4. Each side's dev predictions merged to one tag per word and scored with seqeval.

The data defaults to the tests' generated CoNLL-2003-format set (names from lists in
templated sentences, some a person or a place by context) and vocabulary.

  python benchmarks/compare_ner_transformers.py [--data_dir=conll2003 --spm_model_file=...]
"""

import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from absl import app, flags
import numpy as np
import tf_keras as keras

import albert_tf
from albert_tf.data import ner
from albert_tf.tasks import token_classification as ner_task

flags.DEFINE_string("data_dir", None, "train.txt / dev.txt / test.txt (default: the tests' "
                    "generated set).")
flags.DEFINE_string("spm_model_file", None, "The vocabulary (default: the tests' pydoc one).")
flags.DEFINE_integer("steps", 300, "Training steps, each side.")
flags.DEFINE_integer("batch_size", 16, "Training batch size.")
flags.DEFINE_float("learning_rate", 3e-3, "Peak learning rate.")
flags.DEFINE_integer("warmup", 30, "Warmup steps.")
flags.DEFINE_integer("max_seq_length", 32, "Window length.")
flags.DEFINE_integer("seeds", 3, "Runs per side (seeds 0..N-1 of the start weights and order).")
FLAGS = flags.FLAGS


def _inputs(windows):
  return {k: np.array([getattr(w, a) for w in windows], np.int64) for k, a in (
      ("input_ids", "input_ids"), ("attention_mask", "input_mask"),
      ("token_type_ids", "segment_ids"), ("labels", "label_ids"))}


def transformers_f1(torch, transformers, init_dir, run, seed):
  """Fine-tunes AlbertForTokenClassification on run's training windows; dev F1."""
  torch.manual_seed(seed)
  model = transformers.AlbertForTokenClassification.from_pretrained(init_dir)
  no_decay = [p for n, p in model.named_parameters() if "LayerNorm" in n or n.endswith("bias")]
  decay = [p for n, p in model.named_parameters() if not ("LayerNorm" in n or n.endswith("bias"))]
  optimizer = torch.optim.AdamW([dict(params=decay, weight_decay=0.01),
                                 dict(params=no_decay, weight_decay=0.0)],
                                lr=FLAGS.learning_rate, eps=1e-6)
  schedule = transformers.get_linear_schedule_with_warmup(optimizer, FLAGS.warmup, FLAGS.steps)
  train = {k: torch.tensor(v) for k, v in _inputs(run.windows["train"]).items()}
  train["labels"][train["labels"] < 0] = -100
  rng = np.random.default_rng(seed)
  order = np.concatenate([rng.permutation(len(train["labels"]))
                          for _ in range(FLAGS.steps * FLAGS.batch_size
                                         // len(train["labels"]) + 1)])
  model.train()
  for step in range(FLAGS.steps):
    rows = torch.tensor(order[step * FLAGS.batch_size:(step + 1) * FLAGS.batch_size])
    loss = model(**{k: v[rows] for k, v in train.items()}).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
  model.eval()
  dev = {k: torch.tensor(v) for k, v in _inputs(run.windows["dev"]).items() if k != "labels"}
  with torch.no_grad():
    predicted = model(**dev).logits.argmax(-1).numpy()
  tags = ner.merge_predictions(run.sentences["dev"], run.windows["dev"], predicted, run.labels)
  return ner_task.entity_metrics([s.tags for s in run.sentences["dev"]], tags)["f1"]


def main(argv):
  del argv
  try:
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError:
    sys.exit("needs torch and transformers: pip install -e '.[bench]'")
  from absl import logging  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.WARNING)
  transformers.logging.set_verbosity_error()
  torch.set_num_threads(1)
  from common import NER_CFG as CFG, write_conll  # pylint: disable=g-import-not-at-top
  tmp = tempfile.mkdtemp()
  data = FLAGS.data_dir or write_conll(os.path.join(tmp, "conll"))
  spm_model = FLAGS.spm_model_file
  if not spm_model:
    from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top
    from albert_tf.text import vocab  # pylint: disable=g-import-not-at-top
    corpus = sample_corpus.write_pydoc_corpus(os.path.join(tmp, "pydoc.txt"))
    spm_model = vocab.train_vocab(corpus, os.path.join(tmp, "pydoc"), vocab_size=1500)
  labels = ner.label_list(ner.read_sentences(os.path.join(data, "train.txt")))
  print(f"torch {torch.__version__}, transformers {transformers.__version__}; {FLAGS.steps} "
        f"steps of {FLAGS.batch_size}, learning rate {FLAGS.learning_rate}, tags {labels}")
  results = {"albert_tf": [], "transformers": []}
  for seed in range(FLAGS.seeds):
    keras.utils.set_random_seed(seed)
    init = os.path.join(tmp, f"init{seed}")
    model = albert_tf.AlbertTokenClassifier(albert_tf.AlbertConfig.from_dict(CFG), len(labels))
    model({k: np.zeros([1, 8], np.int32) for k in ("input_word_ids", "input_mask",
                                                  "input_type_ids")})
    albert_tf.save_hf_model(model, init, labels=labels)
    opts = ner_task.NerOptions(
        data_dir=data, output_dir=os.path.join(tmp, f"run{seed}"), albert_directory=init,
        spm_model_file=spm_model, max_seq_length=FLAGS.max_seq_length,
        train_batch_size=FLAGS.batch_size, learning_rate=FLAGS.learning_rate,
        train_step=FLAGS.steps, warmup_step=FLAGS.warmup, save_checkpoints_steps=FLAGS.steps,
        do_train=True, do_eval=True, progress=False, seed=seed, dropout_prob=0.1)
    run = ner_task.NerRun(opts)
    results["albert_tf"].append(run.run()["eval"]["f1"])
    results["transformers"].append(transformers_f1(torch, transformers, init, run, seed))
    print(f"  seed {seed}: dev F1 albert_tf {results['albert_tf'][-1]:.4f}, "
          f"transformers {results['transformers'][-1]:.4f}")
  for side, values in results.items():
    print(f"{side:13s} dev entity F1 {np.mean(values):.4f} (runs: "
          + ", ".join(f"{v:.4f}" for v in values) + ")")


if __name__ == "__main__":
  app.run(main)
