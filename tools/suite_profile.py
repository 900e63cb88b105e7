"""Where the test suite's CPU goes: a pytest plugin, and the table it makes.

Each test process records, per test, its own CPU seconds (setup, call and teardown), the
CPU of the processes it started and waited for (scripts, benchmark workers, Beam workers),
and, inside its own, the CPU spent tracing `tf.function`s (by function name), saving
SavedModels and loading them. The table sums them over the suite:

  PYTHONPATH=tools .venv/bin/python -m pytest -q -p suite_profile -n 3 --dist loadfile \\
      --no-loadscope-reorder tests          # writes suite_profile/<worker>.json
  python tools/suite_profile.py             # the table (--top=N tests, --dir=DIR)

Tracing nested in another trace or in a save is counted once, in the outer one. The
plugin adds ~10% to the suite's time; compare figures of two profiled runs, not a
profiled run with `make test`.
"""

import argparse
import collections
import glob
import json
import os
import time

DIR = os.environ.get("ALBERT_TF_SUITE_PROFILE", "suite_profile")

_by_name = collections.defaultdict(lambda: [0, 0.0])     # "trace:name" -> [count, CPU s]
_per_test = collections.defaultdict(collections.Counter)  # test id -> {part: CPU s}
_current = ["(collection)"]
_depth = [0]


def _wrap(module, attribute, name_of):
  """Counts the CPU of `module.attribute` calls that are not inside another counted one."""
  original = getattr(module, attribute)

  def counted(*args, **kwargs):
    _depth[0] += 1
    started = time.process_time()
    try:
      return original(*args, **kwargs)
    finally:
      _depth[0] -= 1
      if not _depth[0]:
        seconds = time.process_time() - started
        name = name_of(args, kwargs)
        _by_name[name][0] += 1
        _by_name[name][1] += seconds
        _per_test[_current[0]][name.split(":")[0]] += seconds
  setattr(module, attribute, counted)


def pytest_configure(config):  # pylint: disable=unused-argument
  from tensorflow.python.eager.polymorphic_function import tracing_compilation  # pylint: disable=g-direct-tensorflow-import,import-outside-toplevel
  from tensorflow.python.saved_model import load, save  # pylint: disable=g-direct-tensorflow-import,import-outside-toplevel

  def trace_name(args, kwargs):
    options = args[3] if len(args) > 3 else kwargs.get("tracing_options")
    return "trace:" + str(getattr(options, "name", "?"))
  _wrap(tracing_compilation, "_create_concrete_function", trace_name)
  _wrap(save, "save_and_return_nodes", lambda a, k: "save:")
  _wrap(load, "load_partial", lambda a, k: "load:")


def _children_cpu():
  import resource  # pylint: disable=import-outside-toplevel
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


try:
  import pytest

  @pytest.hookimpl(hookwrapper=True, tryfirst=True)
  def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    """The test the counts go to, and its own and its started processes' CPU."""
    _current[0] = item.nodeid
    own, children = time.process_time(), _children_cpu()
    yield
    _per_test[item.nodeid]["own"] += time.process_time() - own
    _per_test[item.nodeid]["children"] += _children_cpu() - children
except ImportError:   # the summary below runs without pytest
  pass


def pytest_unconfigure(config):  # pylint: disable=unused-argument
  os.makedirs(DIR, exist_ok=True)
  worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
  with open(os.path.join(DIR, f"{worker}.json"), "w", encoding="utf-8") as f:
    json.dump(dict(by_name={k: v for k, v in _by_name.items()},
                   per_test={k: dict(v) for k, v in _per_test.items()}), f)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--dir", default=DIR)
  parser.add_argument("--top", type=int, default=25)
  args = parser.parse_args()
  by_name = collections.defaultdict(lambda: [0, 0.0])
  per_test = collections.defaultdict(collections.Counter)
  files = glob.glob(os.path.join(args.dir, "*.json"))
  if not files:
    raise SystemExit(f"no profiles in {args.dir}: run the suite with -p suite_profile first")
  for path in files:
    with open(path, encoding="utf-8") as f:
      data = json.load(f)
    for name, (count, seconds) in data["by_name"].items():
      by_name[name][0] += count
      by_name[name][1] += seconds
    for test, parts in data["per_test"].items():
      per_test[test].update(parts)
  total = collections.Counter()
  for parts in per_test.values():
    total.update(parts)
  print(f"test processes {total['own']:.0f} CPU-s (tracing {total['trace']:.0f}, SavedModel "
        f"saves {total['save']:.0f}, loads {total['load']:.0f}); the processes tests started "
        f"{total['children']:.0f} CPU-s")
  print("\nCPU-s  count  what (tracing by function name, saves, loads)")
  for name, (count, seconds) in sorted(by_name.items(), key=lambda x: -x[1][1])[:args.top]:
    print(f"{seconds:6.1f} {count:6d}  {name}")
  print("\nCPU-s: own + started  (tracing, save, load)  test")
  ranked = sorted(per_test.items(), key=lambda x: -(x[1]["own"] + x[1]["children"]))
  for test, p in ranked[:args.top]:
    print(f"{p['own']:6.1f} + {p['children']:5.1f}  ({p['trace']:5.1f}, {p['save']:4.1f}, "
          f"{p['load']:4.1f})  {test}")


if __name__ == "__main__":
  main()
