"""run_classifier.py's peak memory and rows/s converting a training file to TFRecords,
against the file's size (issue 85): --rows_list labelled sentence pairs (CSV, made here from
a fixed word list, two labels, one in five positive), each size a process of its own that
reads the files, decides the problem, counts the labels (--class_weight=balanced) and
writes the features, as `ClassifierRun` does before it trains.

  python demo.py --output_dir=/tmp/demo
  python benchmarks/benchmark_convert_memory.py --albert_directory=/tmp/demo/pretrained \\
      --rows_list=300000,3000000

Peak RSS is the process's own (`os.wait4`'s ru_maxrss): TensorFlow and the model source
included, so a flat column means memory does not grow with the file.
"""

import os
import random
import re
import subprocess
import sys
import tempfile

from absl import app, flags

flags.DEFINE_string("albert_directory", None, "A model directory (its config and "
                    "vocabulary tokenize the rows).")
flags.DEFINE_list("rows_list", ["30000", "300000"], "Training file sizes, in rows.")
flags.DEFINE_integer("max_seq_length", 128, "run_classifier.py --max_seq_length.")
flags.mark_flags_as_required(["albert_directory"])
FLAGS = flags.FLAGS
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("the model reads a sentence pair and says whether the second one means the same "
         "as the first shares revenue rose percent in the quarter company said on monday "
         "its chief executive would step down after years of growth and new markets").split()

# What the child process runs: the task's set-up (reading, the problem, the label counts,
# the features), no training; it prints the rows and the seconds the set-up took.
CHILD = """
import sys, time
from albert_tf.tasks.classification import ClassifierOptions, ClassifierRun
started = time.time()
ClassifierRun(ClassifierOptions(
    train_file=sys.argv[1], dev_file=sys.argv[2], output_dir=sys.argv[3],
    albert_directory=sys.argv[4], max_seq_length=int(sys.argv[5]), do_train=True,
    text_columns="sentence1,sentence2", class_weight="balanced", progress=False))
print(f"converted in {time.time() - started:.2f} s")
"""


def write_rows(path: str, rows: int, seed: int) -> None:
  """`rows` labelled pairs of 8-30 words, one in five labelled 1."""
  rng = random.Random(seed)
  with open(path, "w", encoding="utf-8") as f:
    f.write("sentence1,sentence2,label\n")
    for _ in range(rows):
      a = " ".join(rng.choices(WORDS, k=rng.randint(8, 30)))
      b = " ".join(rng.choices(WORDS, k=rng.randint(8, 30)))
      f.write(f"{a},{b},{int(rng.random() < 0.2)}\n")


def main(argv):
  del argv
  work = tempfile.mkdtemp(prefix="benchmark_convert_memory_")
  dev = os.path.join(work, "dev.csv")
  write_rows(dev, 200, 1)
  print(f"{'rows':>10} {'peak RSS MiB':>13} {'rows/s':>9}")
  for rows in (int(n) for n in FLAGS.rows_list):
    train = os.path.join(work, f"train_{rows}.csv")
    write_rows(train, rows, 0)
    out = os.path.join(work, f"run_{rows}")
    log = os.path.join(work, f"run_{rows}.stderr")
    with open(log, "w", encoding="utf-8") as errors:
      process = subprocess.Popen(  # pylint: disable=consider-using-with
          [sys.executable, "-c", CHILD, train, dev, out, FLAGS.albert_directory,
           str(FLAGS.max_seq_length)], stdout=subprocess.PIPE, stderr=errors, text=True,
          cwd=ROOT)
      stdout = process.stdout.read()
      _, status, usage = os.wait4(process.pid, 0)
    found = re.search(r"converted in ([\d.]+) s", stdout)
    if status or not found:
      raise RuntimeError(f"the conversion of {train} failed (status {status}); see {log}")
    seconds = float(found.group(1))
    print(f"{rows:>10} {usage.ru_maxrss / 1024:>13.0f} {rows / seconds:>9.0f}", flush=True)
    os.remove(train)


if __name__ == "__main__":
  app.run(main)
