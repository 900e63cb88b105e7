"""docs/performance.md's table of ALBERT lite on the demo's model: MRPC-format dev accuracy
of run_classifier.py at the teacher's N passes, N/2 and N/4, fine-tuned alone (from the
pretrained encoder), taught by the demo's MRPC run (--teacher, which starts from its
weights), and from the teacher's weights without its soft labels, at each seed, two runs
at a time.

Needs a `make demo` output directory (its pretrained TF-Hub encoder, task and MRPC run);
every run has the demo's own fine-tuning flags (demo.mrpc_flags), from the encoder read
as --albert_directory (the same weights at any depth):

  python demo.py --output_dir=/tmp/demo
  python tools/lite_table.py --demo_dir=/tmp/demo --seeds=0,1,2,3 --output_dir=/tmp/lite

It also writes the demo's dev pairs, five times over, as <output_dir>/dev_pairs.jsonl, the
texts of docs/performance.md's speed columns (benchmarks/benchmark_predict.py --input_file).
"""

import concurrent.futures
import json
import os
import statistics
import subprocess
import sys

from absl import app, flags

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
import demo  # pylint: disable=g-import-not-at-top,wrong-import-position

flags.DEFINE_string("demo_dir", None, "A `python demo.py --output_dir` directory.")
flags.DEFINE_list("seeds", ["0", "1", "2", "3"], "Seeds of each student's run.")
flags.DEFINE_list("depths", [], "Passes to fine-tune at (default: N, N/2 and N/4 of the "
                  "teacher's N).")
flags.DEFINE_integer("train_step", 300, "Steps of each run (the demo's 300).")
flags.DEFINE_integer("parallel", 2, "Runs at a time.")
flags.mark_flag_as_required("demo_dir")
FLAGS = flags.FLAGS


def results(path: str) -> dict:
  with open(os.path.join(path, "eval_results.txt"), encoding="utf-8") as f:
    pairs = (line.partition(" = ") for line in f)
    return {k.strip(): v.strip() for k, _, v in pairs}


# How each student starts and learns: from the pretrained encoder on the labels alone,
# taught (from the teacher's weights, --teacher's default), and from the teacher's weights
# on the labels alone (what the soft labels add to that start).
HOW = dict(alone=lambda demo_dir: dict(albert_directory=os.path.join(demo_dir, "hub",
                                                                      "albert_encoder")),
           taught=lambda demo_dir: dict(teacher=os.path.join(demo_dir, "mrpc")),
           teachers_weights=lambda demo_dir: dict(albert_directory=os.path.join(demo_dir,
                                                                                "mrpc")))


def fine_tune(name: str, depth: int, seed: int, how: str) -> str:
  """One run_classifier.py run (skipped when its eval_results.txt is there); its dir."""
  out = os.path.join(FLAGS.output_dir, name)
  if os.path.exists(os.path.join(out, "eval_results.txt")):
    return out
  values = demo.mrpc_flags(
      os.path.join(FLAGS.demo_dir, "glue_data", "MRPC"), out, FLAGS.train_step, seed,
      num_hidden_layers=depth, progress=False, **HOW[how](FLAGS.demo_dir))
  command = [sys.executable, os.path.join(HERE, "run_classifier.py")] + demo.command_line(values)
  os.makedirs(os.path.dirname(out), exist_ok=True)
  with open(out + ".log", "w", encoding="utf-8") as log:
    subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True, cwd=HERE)
  return out


def write_pairs(teacher, path: str) -> None:
  """The demo's dev pairs, five times over, as JSON Lines of the run's text inputs:
  benchmarks/benchmark_predict.py --model=<demo>/mrpc --input_file=<this file>."""
  from albert_tf.data import glue  # pylint: disable=g-import-not-at-top
  examples = glue.read_examples(os.path.join(FLAGS.demo_dir, "glue_data", "MRPC"),
                                glue.get_task("MRPC"), "dev")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for e in examples * 5:
      f.write(json.dumps(dict(zip(teacher.text_inputs, (e.text_a, e.text_b)))) + "\n")


def main(argv):
  del argv
  from albert_tf import runs  # pylint: disable=g-import-not-at-top
  FLAGS.output_dir = os.path.abspath(FLAGS.output_dir or os.path.join(FLAGS.demo_dir, "lite"))
  teacher = runs.Run.read(os.path.join(FLAGS.demo_dir, "mrpc"), "--demo_dir")
  full = teacher.config.num_hidden_layers
  depths = [int(d) for d in FLAGS.depths] or sorted({full, max(full // 2, 1),
                                                       max(full // 4, 1)}, reverse=True)
  seeds = [int(s) for s in FLAGS.seeds]
  write_pairs(teacher, os.path.join(FLAGS.output_dir, "dev_pairs.jsonl"))
  jobs = [(f"{how}@{d}/seed{s}", d, s, how)
          for s in seeds for d in depths for how in (HOW if d < full else ["alone"])]
  runs.Run.read(os.path.join(FLAGS.demo_dir, "mrpc")).own_checkpoint()   # (once, not racing)
  with concurrent.futures.ThreadPoolExecutor(FLAGS.parallel) as pool:
    dirs = dict(zip([j[0] for j in jobs], pool.map(lambda j: fine_tune(*j), jobs)))
  got = {name: float(results(path)["accuracy"]) for name, path in dirs.items()}
  mine = float(results(teacher.path)["accuracy"])
  print(f"Teacher ({full} passes, the demo's MRPC run): dev accuracy {mine:.4f}")
  print("\n| passes | how | " + " | ".join(f"seed {s}" for s in seeds)
        + " | mean | min / teacher's |")
  print("|---|---|" + "---|" * (len(seeds) + 2))
  for d in depths:
    for how in HOW if d < full else ["alone"]:
      values = [got[f"{how}@{d}/seed{s}"] for s in seeds]
      print(f"| {d} | {how} | " + " | ".join(f"{v:.4f}" for v in values)
            + f" | {statistics.mean(values):.4f} | {min(values) / mine:.3f} |")
  for d in depths:
    if d < full:
      gaps = [got[f"taught@{d}/seed{s}"] - got[f"alone@{d}/seed{s}"] for s in seeds]
      print(f"{d} passes, taught less alone, in points: "
            + ", ".join(f"{100 * g:+.2f}" for g in gaps)
            + f"; mean {100 * statistics.mean(gaps):+.2f}")


if __name__ == "__main__":
  app.run(main)
