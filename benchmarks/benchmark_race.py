"""RACE fine-tuning throughput of run_race (questions/s), float32 against bfloat16, one process.

  python benchmarks/benchmark_race.py                  # ALBERT-base, seq 512, batch 2 questions

Runs the real fine-tuning loop (multiple_choice.run) on a generated
RACE-format set whose articles fill the 512-piece window, from random
ALBERT-base weights with the vocabulary trained here (2,000 pieces: only the
embedding gather differs from the 30k vocabulary). Each question is four
packed sequences. The first `--warmup_steps` steps (tracing) are left out;
questions/s is the mean of the later steps.
"""

import csv
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags  # pylint: disable=g-import-not-at-top

from albert_tf import AlbertConfig, multiple_choice, vocab  # pylint: disable=g-import-not-at-top
from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top

flags.DEFINE_enum("preset", "base", ["base", "small"], "base: ALBERT-base; small: H=128, 4 layers.")
flags.DEFINE_integer("seq_length", 512, "max_seq_length.")
flags.DEFINE_integer("batch_size", 2, "Training batch size in questions (x4 sequences).")
flags.DEFINE_integer("steps", 8, "Training steps per configuration.")
flags.DEFINE_integer("warmup_steps", 2, "Steps left out of the measurement.")
flags.DEFINE_list("dtypes", ["float32", "bfloat16"], "Compute dtypes to compare.")
FLAGS = flags.FLAGS


def main(_):
  tmp = tempfile.mkdtemp(prefix="bench_race_")
  corpus = sample_corpus.write_pydoc_corpus(os.path.join(tmp, "pydoc.txt"))
  spm = vocab.train_vocab(corpus, os.path.join(tmp, "pydoc"), vocab_size=2000)
  data = sample_corpus.write_race_task(os.path.join(tmp, "data"), (("train", 40), ("dev", 2)),
                                       filler_sentences=FLAGS.seq_length // 18)
  if FLAGS.preset == "base":
    config = AlbertConfig.from_preset("base")
  else:
    config = AlbertConfig(embedding_size=64, hidden_size=128, num_hidden_layers=4,
                          num_attention_heads=4, intermediate_size=512)
  config = AlbertConfig.from_dict(dict(config.to_dict(), vocab_size=2000))
  config.to_json_file(os.path.join(tmp, "albert_config.json"))
  results = {}
  for dtype in FLAGS.dtypes:
    out = os.path.join(tmp, f"run_{dtype}")
    multiple_choice.run(multiple_choice.RaceOptions(
        data_dir=data, output_dir=out, albert_config_file=os.path.join(tmp, "albert_config.json"),
        spm_model_file=spm, max_seq_length=FLAGS.seq_length, do_train=True,
        train_batch_size=FLAGS.batch_size, eval_batch_size=4, train_step=FLAGS.steps,
        warmup_step=0, save_checkpoints_steps=FLAGS.steps, log_steps=1, dtype=dtype,
        progress=False))
    with open(os.path.join(out, "train_log.csv")) as f:
      rows = list(csv.DictReader(f))[FLAGS.warmup_steps:]
    results[dtype] = sum(float(r["examples_per_second"]) for r in rows) / len(rows)
  print(f"\nRACE fine-tuning, {FLAGS.preset}, seq {FLAGS.seq_length}, batch {FLAGS.batch_size} "
        f"questions (mean of steps {FLAGS.warmup_steps + 1}-{FLAGS.steps}):")
  for dtype, value in results.items():
    print(f"  {dtype:9s} {value:6.3f} questions/s ({4 * value:.2f} sequences/s)")
  if len(results) == 2:
    a, b = results.values()
    print(f"  ratio {FLAGS.dtypes[1]}/{FLAGS.dtypes[0]}: {b / a:.2f}")


if __name__ == "__main__":
  app.run(main)
