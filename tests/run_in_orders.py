"""Runs test files in one process in several orders, to show that no test depends on
what ran before it (each test seeds and resets what it relies on; conftest.py).

  python tests/run_in_orders.py tests/test_export.py tests/test_tflite.py --shuffles=2

Runs the files' tests in the given file order, with the files reversed, then in
`--shuffles` seeded shuffles (files in a random order, each file's tests in a random
order, as pytest-random-order's default), each in a fresh process (conftest.py orders the
collected tests as the file named by ALBERT_TF_TEST_ORDER lists them), and prints
each order's result and the tests that did not pass.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("files", nargs="+")
  parser.add_argument("--shuffles", type=int, default=2)
  parser.add_argument("--orders", default="given,reversed,shuffles",
                      help="which of given, reversed and shuffles to run")
  parser.add_argument("-k", default=None, help="pytest -k for the collection")
  args = parser.parse_args()
  selection = args.files + (["-k", args.k] if args.k else [])
  collected = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only",
                              *selection], capture_output=True, text=True)
  ids = [line for line in collected.stdout.splitlines() if "::" in line]
  by_file = {f: [i for i in ids if i.startswith(f)] for f in args.files}
  orders = {}
  if "given" in args.orders:
    orders["given"] = [i for f in args.files for i in by_file[f]]
  if "reversed" in args.orders:
    orders["reversed files"] = [i for f in reversed(args.files) for i in by_file[f]]
  if "shuffles" in args.orders:
    for seed in range(1, args.shuffles + 1):
      # as pytest-random-order's default (bucket=module): files in a random order, each
      # file's tests shuffled (interleaving files would rebuild module fixtures per test)
      rng = random.Random(seed)
      files = list(args.files)
      rng.shuffle(files)
      orders[f"shuffle {seed}"] = [i for f in files for i in rng.sample(by_file[f],
                                                                          len(by_file[f]))]
  failed = False
  for name, order in orders.items():
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
      f.write("\n".join(order) + "\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-p",
                           "no:cacheprovider", *selection], capture_output=True, text=True,
                          env=dict(os.environ, ALBERT_TF_TEST_ORDER=f.name))
    os.remove(f.name)
    lines = done.stdout.strip().splitlines() or [done.stderr[-500:]]
    print(f"{name} ({len(order)} tests, first {order[0]}): {lines[-1]}", flush=True)
    for line in lines:
      if line.startswith(("FAILED", "ERROR")):
        print("  " + line, flush=True)
    failed |= done.returncode != 0
  sys.exit(1 if failed else 0)


if __name__ == "__main__":
  main()
