"""predict.py's peak memory and rows/s against the input's size (issue 85): the same run
on --rows_list rows (a run's dev pairs or texts repeated), each size a process of its own,
read --chunk_rows at a time; and, at --whole_at rows, the whole file as one chunk (what
predict.py did before it streamed), the throughput to keep.

  python demo.py --output_dir=/tmp/demo
  python benchmarks/benchmark_predict_memory.py --model=/tmp/demo/mrpc \\
      --input_file=/tmp/lite/dev_pairs.jsonl --rows_list=30000,300000,3000000

Peak RSS is the process's own (`os.wait4`'s ru_maxrss): TensorFlow and the model
included, so a flat column means memory does not grow with the input.
"""

import os
import re
import subprocess
import sys
import tempfile

from absl import app, flags

flags.DEFINE_string("model", None, "A run (predict.py --model).")
flags.DEFINE_string("input_file", None, "A .jsonl of the run's text columns, repeated to "
                    "each size.")
flags.DEFINE_list("rows_list", ["30000", "300000"], "Input sizes, in rows.")
flags.DEFINE_integer("chunk_rows", 10000, "predict.py --chunk_rows.")
flags.DEFINE_integer("whole_at", 300000, "Also this size in one chunk (0: not).")
flags.mark_flags_as_required(["model", "input_file"])
FLAGS = flags.FLAGS
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
  del argv
  with open(FLAGS.input_file, encoding="utf-8") as f:
    lines = [line for line in f if line.strip()]
  work = tempfile.mkdtemp(prefix="benchmark_predict_memory_")
  runs = [(int(n), FLAGS.chunk_rows) for n in FLAGS.rows_list]
  if FLAGS.whole_at:
    runs.append((FLAGS.whole_at, FLAGS.whole_at))
  print(f"{'rows':>10} {'chunk_rows':>11} {'peak RSS MiB':>13} {'rows/s':>9}")
  for rows, chunk in runs:
    source = os.path.join(work, f"rows_{rows}.jsonl")
    if not os.path.exists(source):
      with open(source, "w", encoding="utf-8") as f:
        for i in range(rows):
          f.write(lines[i % len(lines)])
    rss, rate = peak(source, chunk, work)
    print(f"{rows:>10} {chunk:>11} {rss:>13.0f} {rate:>9.0f}", flush=True)
    if rows != FLAGS.whole_at or chunk == FLAGS.whole_at:
      os.remove(source)


def peak(source: str, chunk: int, work: str):
  """(peak RSS in MiB: the process's own, through os.wait4; rows/s) of one predict.py."""
  out = os.path.join(work, "answers.jsonl")
  process = subprocess.Popen(  # pylint: disable=consider-using-with
      [sys.executable, os.path.join(ROOT, "predict.py"), f"--model={FLAGS.model}",
       f"--input_file={source}", f"--output_file={out}", f"--chunk_rows={chunk}",
       "--noprogress"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
  stdout = process.stdout.read()
  _, status, usage = os.wait4(process.pid, 0)
  found = re.search(r"Wrote (\d+) answers .*\(([\d.]+) rows/s\)", stdout)
  if status or not found:
    raise RuntimeError(f"predict.py failed on {source} (status {status})")
  os.remove(out)
  return usage.ru_maxrss / 1024, float(found.group(2))


if __name__ == "__main__":
  app.run(main)
