"""RACE fine-tuning throughput of run_race (questions/s), float32 against bfloat16, one process.

  python benchmarks/benchmark_race.py                  # ALBERT-base, seq 512, batch 2 questions

Runs the real fine-tuning loop (multiple_choice.run) on a generated
RACE-format set whose articles fill the 512-piece window, from random
ALBERT-base weights with the vocabulary trained here (2,000 pieces: only the
embedding gather differs from the 30k vocabulary). Each question is four
packed sequences. The first `--warmup_steps` steps (tracing) are left out;
questions/s is the mean of the later steps.
"""

import os

from absl import app, flags

import benchmarking  # pylint: disable=g-bad-import-order
from albert_tf.data import sample_corpus  # pylint: disable=g-bad-import-order
from albert_tf.tasks import multiple_choice  # pylint: disable=g-bad-import-order

benchmarking.define_training_flags(512, 2, 8, "Training batch size in questions (x4 sequences).")
FLAGS = flags.FLAGS


def main(_):
  tmp, spm, config_file = benchmarking.workspace("bench_race_", FLAGS.preset)
  data = sample_corpus.write_race_task(os.path.join(tmp, "data"), (("train", 40), ("dev", 2)),
                                       filler_sentences=FLAGS.seq_length // 18)
  results = {}
  for dtype in FLAGS.dtypes:
    out = os.path.join(tmp, f"run_{dtype}")
    multiple_choice.run(multiple_choice.RaceOptions(
        data_dir=data, output_dir=out, albert_config_file=config_file,
        spm_model_file=spm, max_seq_length=FLAGS.seq_length, do_train=True,
        train_batch_size=FLAGS.batch_size, eval_batch_size=4, train_step=FLAGS.steps,
        warmup_step=0, save_checkpoints_steps=FLAGS.steps, log_steps=1, dtype=dtype,
        jit_compile=FLAGS.jit_compile, progress=False))
    results[dtype] = benchmarking.mean_throughput(out, FLAGS.warmup_steps)
  print(f"\nRACE fine-tuning, {FLAGS.preset}, seq {FLAGS.seq_length}, batch {FLAGS.batch_size} "
        f"questions (mean of steps {FLAGS.warmup_steps + 1}-{FLAGS.steps}):")
  for dtype, value in results.items():
    print(f"  {dtype:9s} {value:6.3f} questions/s ({4 * value:.2f} sequences/s)")
  benchmarking.print_ratio(results, FLAGS.dtypes)


if __name__ == "__main__":
  app.run(main)
