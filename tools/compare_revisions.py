"""Speed of this checkout against another, as a ratio from one run.

Runs the same benchmark script of both checkouts in turn (before, after,
before, after, ...), takes every number the regular expression `--pattern`
captures in each run's output (group 1; a line's text up to the number names
it), and prints, per figure, the medians and the ratio after/before (above 1:
this checkout is faster). Alternating in one run keeps the machine's drift
out of the ratio.

  git worktree add /tmp/before HEAD~3      # or a clone at the older revision
  python tools/compare_revisions.py --before=/tmp/before --rounds=3 \
      --pattern='float32 +([0-9.]+)' -- benchmarks/benchmark_classifier.py --dtypes=float32
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(repo: str, command, pattern: str):
  """{label: figure} of one run of `command` in `repo`."""
  script, *args = command
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=repo, PYTHONWARNINGS="ignore")
  done = subprocess.run([sys.executable, os.path.join(repo, script), *args], cwd=repo, env=env,
                        capture_output=True, text=True)
  found = {m.string[m.string.rfind("\n", 0, m.start()) + 1:m.start(1)].strip() or str(i):
           float(m.group(1)) for i, m in enumerate(re.finditer(pattern, done.stdout))}
  if done.returncode or not found:
    sys.exit(f"{repo}/{script} failed or printed nothing matching {pattern!r}:\n"
             f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
  return found


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--before", required=True, help="the other checkout")
  parser.add_argument("--after", default=HERE, help="this checkout (default)")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--pattern", required=True, help="regex whose group 1 is the figure; "
                      "higher is better")
  parser.add_argument("command", nargs="+", help="script (relative to each checkout) and flags")
  args = parser.parse_args()
  runs = {"before": [], "after": []}
  for i in range(args.rounds):
    for name in ("before", "after"):
      runs[name].append(measure(getattr(args, name), args.command, args.pattern))
      print(f"round {i + 1} {name}: " + ", ".join(f"{k} {v:.4g}" for k, v in
                                                 runs[name][-1].items()), flush=True)
  for label in runs["before"][0]:
    before, after = (statistics.median(r[label] for r in runs[k]) for k in ("before", "after"))
    print(f"{label}: median before {before:.4g}, after {after:.4g}, "
          f"ratio after/before {after / before:.3f}")


if __name__ == "__main__":
  main()
