"""Fine-tuning throughput of run_classifier (examples/s), float32 against bfloat16, one process.

  python benchmarks/benchmark_classifier.py                      # ALBERT-base, seq 128, batch 8
  python benchmarks/benchmark_classifier.py --preset=small --batch_size=32

Runs the real fine-tuning loop (classifier.run) on a generated MRPC-format task
from random weights. ALBERT-base's encoder is used with the vocabulary trained
here (2,000 pieces instead of 30,000: the embedding lookup is the only part
that changes, and it is a gather). The first `--warmup_steps` steps (tracing)
are left out; examples/s is the mean of the later logging windows.
"""

import os

from absl import app, flags

import benchmarking  # pylint: disable=g-bad-import-order
from albert_tf.data import sample_corpus  # pylint: disable=g-bad-import-order
from albert_tf.tasks import classification as classifier  # pylint: disable=g-bad-import-order

benchmarking.define_training_flags(128, 8, 12)
FLAGS = flags.FLAGS


def main(_):
  tmp, spm, config_file = benchmarking.workspace("bench_classifier_", FLAGS.preset)
  data = sample_corpus.write_paraphrase_task(os.path.join(tmp, "MRPC"), num_train=1000,
                                             num_dev=32, num_test=8, max_words=60)
  results = {}
  for dtype in FLAGS.dtypes:
    out = os.path.join(tmp, f"run_{dtype}")
    classifier.run(classifier.ClassifierOptions(
        data_dir=data, output_dir=out, task_name="MRPC",
        albert_config_file=config_file, spm_model_file=spm,
        max_seq_length=FLAGS.seq_length, do_train=True, train_batch_size=FLAGS.batch_size,
        eval_batch_size=32, train_step=FLAGS.steps, save_checkpoints_steps=FLAGS.steps,
        log_steps=1, dtype=dtype, jit_compile=FLAGS.jit_compile, progress=False))
    results[dtype] = benchmarking.mean_throughput(out, FLAGS.warmup_steps)
  print(f"\nFine-tuning examples/s, {FLAGS.preset}, seq {FLAGS.seq_length}, batch "
        f"{FLAGS.batch_size} (mean of steps {FLAGS.warmup_steps + 1}-{FLAGS.steps}):")
  for dtype, value in results.items():
    print(f"  {dtype:9s} {value:7.2f}")
  benchmarking.print_ratio(results, FLAGS.dtypes)


if __name__ == "__main__":
  app.run(main)
