"""SQuAD prediction throughput of run_squad (questions/s), float32 against bfloat16, one process.

  python benchmarks/benchmark_squad.py                 # ALBERT-base, seq 384, v1.1 and v2.0 heads

Times the real prediction path (SquadRun.predict_answers: tf.data over the cached
features, the model, and the n-best / null-score post-processing) on a
generated SQuAD-format file whose contexts fill one 384-piece window each,
with random ALBERT-base weights and the vocabulary trained here (2,000
pieces: only the embedding gather differs from the 30k vocabulary). Each
configuration predicts the file once to trace the graph, then `--repeats`
more times; the fastest pass counts (this machine is shared and noisy).
"""

import os
import time

from absl import app, flags

import benchmarking  # pylint: disable=g-bad-import-order
from albert_tf.tasks import question_answering  # pylint: disable=g-bad-import-order
from albert_tf.data import sample_corpus  # pylint: disable=g-bad-import-order
from albert_tf.training.distribute import set_precision  # pylint: disable=g-bad-import-order

flags.DEFINE_enum("preset", "base", ["base", "small"], "base: ALBERT-base; small: H=128, 4 layers.")
flags.DEFINE_integer("seq_length", 384, "max_seq_length.")
flags.DEFINE_integer("batch_size", 8, "predict_batch_size.")
flags.DEFINE_integer("questions", 32, "Questions in the generated file.")
flags.DEFINE_list("dtypes", ["float32", "bfloat16"], "Compute dtypes to compare.")
flags.DEFINE_list("versions", ["1", "2"], "SQuAD heads to time: 1 (v1.1), 2 (v2.0).")
flags.DEFINE_integer("repeats", 2, "Timed passes per configuration (the fastest counts).")
FLAGS = flags.FLAGS


def main(_):
  tmp, spm, config_file = benchmarking.workspace("bench_squad_", FLAGS.preset)
  results = {}
  for version in FLAGS.versions:
    v2 = version == "2"
    # About 20 pieces per pydoc sentence: contexts of about one window.
    data = sample_corpus.write_squad_task(
        os.path.join(tmp, f"dev{version}.json"), FLAGS.questions, v2,
        filler_sentences=FLAGS.seq_length // 22, seed=0)
    for dtype in FLAGS.dtypes:
      opts = question_answering.SquadOptions(
          output_dir=os.path.join(tmp, f"run{version}_{dtype}"),
          albert_config_file=config_file, spm_model_file=spm,
          predict_file=data, version_2_with_negative=v2, max_seq_length=FLAGS.seq_length,
          do_predict=True, predict_batch_size=FLAGS.batch_size, dtype=dtype, progress=False)
      run = question_answering.SquadRun(opts)
      set_precision(dtype)
      model = run.build_model()
      run.predict_answers(model)                      # traces
      elapsed = float("inf")
      for _ in range(FLAGS.repeats):
        started = time.time()
        run.predict_answers(model)
        elapsed = min(elapsed, time.time() - started)
      windows = len(run.predict_features.metadata)
      results[(version, dtype)] = (len(run.predict_examples) / elapsed, windows / elapsed)
  set_precision("float32")
  print(f"\nSQuAD prediction, {FLAGS.preset}, seq {FLAGS.seq_length}, batch {FLAGS.batch_size}, "
        f"{FLAGS.questions} questions:")
  for (version, dtype), (questions, windows) in results.items():
    print(f"  v{'2.0' if version == '2' else '1.1'} {dtype:9s} {questions:7.2f} questions/s "
          f"({windows:.2f} windows/s)")
  for version in FLAGS.versions:
    if len(FLAGS.dtypes) == 2:
      a, b = (results[(version, d)][0] for d in FLAGS.dtypes)
      print(f"  v{'2.0' if version == '2' else '1.1'} ratio {FLAGS.dtypes[1]}/{FLAGS.dtypes[0]}: "
            f"{b / a:.2f}")


if __name__ == "__main__":
  app.run(main)
