"""What --max_seq_length=512 costs on MRPC-length pairs: run_classifier.py at 512 and 128.

  python benchmarks/benchmark_real_length.py                    # ALBERT-base, 40 steps, 2 rounds
  python benchmarks/benchmark_real_length.py --runs=512:buckets,128:buckets --rounds=3

Each run is `run_classifier.py --do_train --do_eval` in a fresh process, on a
generated MRPC-format task whose pairs have about MRPC's lengths in
SentencePiece pieces (median 53, p90 106 with the defaults; MRPC: about 60 and
100), from random weights (ALBERT-base by default) with the pydoc vocabulary
(2,000 pieces). The runs alternate round by round, so machine noise
hits each alike. A run's training time is the sum of its logged step times,
tracing of every bucket width included; R = time at the shortest length / time
at the longest (T128 / T512: the original GLUE recipe trains at 512). Dev
accuracy is read from eval_results.txt.
"""

import os
import statistics
import subprocess
import sys

from absl import app, flags

import benchmarking  # pylint: disable=g-bad-import-order
from albert_tf.data import sample_corpus  # pylint: disable=g-bad-import-order
from albert_tf.text import tokenization  # pylint: disable=g-bad-import-order
from albert_tf.training import logs  # pylint: disable=g-bad-import-order

flags.DEFINE_enum("preset", "base", ["base", "small", "tiny"],
                  "base: ALBERT-base; small: H=128, 4 layers; tiny: H=32, 2 layers (a check).")
flags.DEFINE_list("runs", ["512:buckets", "128:buckets", "512:fixed", "128:fixed"],
                  "max_seq_length:buckets|fixed of each run (fixed = --nobucket_by_length).")
flags.DEFINE_integer("steps", 40, "Training steps per run.")
flags.DEFINE_integer("batch_size", 8, "Training batch size.")
flags.DEFINE_integer("rounds", 2, "Processes per run (alternating).")
flags.DEFINE_integer("max_words", 36, "Longest generated sentence in words (sets the lengths).")
FLAGS = flags.FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pair_lengths(data_dir: str, spm_model: str):
  """Pieces per train pair ([CLS] a [SEP] b [SEP]), as run_classifier packs them uncut."""
  tokenizer = tokenization.FullTokenizer(None, spm_model_file=spm_model)
  lengths = []
  with open(os.path.join(data_dir, "train.tsv"), encoding="utf-8") as f:
    for line in list(f)[1:]:
      a, b = line.rstrip("\n").split("\t")[3:5]
      lengths.append(len(tokenizer.tokenize(a)) + len(tokenizer.tokenize(b)) + 3)
  return sorted(lengths)


def run_once(name, seq, bucket, data_dir, spm, config_file, out):
  """One run_classifier.py process; (training seconds, dev accuracy)."""
  command = [sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=MRPC",
             f"--data_dir={data_dir}", f"--output_dir={out}", f"--albert_config_file={config_file}",
             f"--spm_model_file={spm}", "--do_train", "--do_eval", f"--max_seq_length={seq}",
             f"--train_batch_size={FLAGS.batch_size}", "--eval_batch_size=32",
             f"--train_step={FLAGS.steps}", f"--warmup_step={FLAGS.steps // 10}",
             f"--save_checkpoints_steps={FLAGS.steps}", "--log_steps=1",
             f"--bucket_by_length={str(bucket).lower()}"]
  done = subprocess.run(command, capture_output=True, text=True)
  if done.returncode:
    raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
  rows = logs.read_csv(os.path.join(out, "train_log.csv"))
  seconds = sum(FLAGS.batch_size / float(r["examples_per_second"]) for r in rows)
  with open(os.path.join(out, "eval_results.txt")) as f:
    results = dict(line.strip().split(" = ") for line in f if " = " in line)
  return seconds, float(results["accuracy"])


def main(_):
  tmp, spm, config_file = benchmarking.workspace("bench_real_length_", FLAGS.preset)
  data_dir = sample_corpus.write_paraphrase_task(
      os.path.join(tmp, "MRPC"), num_train=FLAGS.steps * FLAGS.batch_size, num_dev=128,
      num_test=8, max_words=FLAGS.max_words)
  lengths = pair_lengths(data_dir, spm)
  print(f"{FLAGS.preset}, batch {FLAGS.batch_size}, {FLAGS.steps} steps; pair lengths in pieces: "
        f"median {statistics.median(lengths)}, p90 {lengths[int(0.9 * len(lengths))]}, "
        f"max {lengths[-1]} (MRPC: median ~60, p90 ~100)", flush=True)
  runs = {}
  for spec in FLAGS.runs:
    seq, mode = spec.split(":")
    if mode not in ("buckets", "fixed"):
      raise app.UsageError(f"--runs: {spec!r} is not max_seq_length:buckets|fixed")
    runs[spec] = (int(seq), mode == "buckets")
  got = {spec: [] for spec in runs}
  for round_index in range(FLAGS.rounds):
    for spec, (seq, bucket) in runs.items():
      out = os.path.join(tmp, f"run_{spec.replace(':', '_')}_{round_index}")
      got[spec].append(run_once(spec, seq, bucket, data_dir, spm, config_file, out))
      print(f"  {spec:12s} round {round_index + 1}: {got[spec][-1][0]:7.1f} s of training, "
            f"dev accuracy {got[spec][-1][1]:.4f}", flush=True)
  seconds = {spec: statistics.median(s for s, _ in results) for spec, results in got.items()}
  print(f"\nrun_classifier.py training time, median of {FLAGS.rounds}:")
  for spec, value in seconds.items():
    accuracies = sorted({round(a, 4) for _, a in got[spec]})
    print(f"  {spec:12s} {value:7.1f} s   dev accuracy {', '.join(map(str, accuracies))}")
  for mode in ("buckets", "fixed"):
    lengths = sorted(seq for spec, (seq, bucket) in runs.items() if bucket == (mode == "buckets"))
    if len(lengths) >= 2:
      short, long = lengths[0], lengths[-1]
      ratio = seconds[f"{short}:{mode}"] / seconds[f"{long}:{mode}"]
      print(f"  R ({mode}) = T{short} / T{long} = {ratio:.2f}")


if __name__ == "__main__":
  app.run(main)
