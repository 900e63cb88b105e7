"""Test setup: two logical CPUs (for MirroredStrategy) and a clean Keras state per test."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# As the scripts do: TensorFlow's own Keras alias is then tf_keras (albert_tf never uses the
# alias), so TensorFlow does not import Keras 3 (and scikit-learn) at startup: 1.7 s of
# every test process and every script a test starts, which inherit it.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
  # `make test` runs two test processes on the machine's two cores: one intra-op thread
  # each (and in the scripts they start), or their thread pools contend for both cores
  # and a test takes ~1.5x as long as alone (docs/testing.md).
  os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

import pytest
import tensorflow as tf
import tf_keras as keras

from albert_tf import cli

# As in the scripts: TensorFlow's imported objects out of the garbage collector's sight and
# fewer collections (tracing and exporting, most of the suite's CPU, take 5-17% less).
cli.tune_gc()

_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


@pytest.fixture(scope="module", autouse=True)
def _seed_module_fixtures():
  """Module fixtures (the fine-tuned runs several tests read) are built before the
  per-test reset below: seed them too, so what they train does not depend on which
  tests ran earlier in the same process (the int8 TFLite test's agreement fell to 0.365
  when another file ran first)."""
  keras.backend.clear_session()
  keras.utils.set_random_seed(0)


@pytest.fixture(autouse=True)
def _reset_keras():
  keras.mixed_precision.set_global_policy("float32")
  keras.backend.clear_session()
  tf.random.set_seed(0)
  yield
  keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def learning_seed():
  """The start of every learning test (its initial weights, data order and dropout):
  ALBERT_TF_LEARNING_SEED, 0 unless set. Each must learn from any seed, whatever the CPU's
  summation order; docs/testing.md has the table of each at several seeds."""
  return int(os.environ.get("ALBERT_TF_LEARNING_SEED", "0"))


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory):
  """A small ALBERT vocabulary trained on the pydoc topics that ship with Python."""
  from albert_tf.text import vocab
  from albert_tf.data import sample_corpus
  root = tmp_path_factory.mktemp("vocab")
  corpus = sample_corpus.write_pydoc_corpus(str(root / "pydoc.txt"))
  return vocab.train_vocab(corpus, str(root / "pydoc"), vocab_size=1500)


# `make test` hands whole files to its processes in collection order (the Makefile's
# --no-loadscope-reorder), so these, the files of most summed test time in the suite
# (longest first, docs/testing.md), start first and no process is left with a long file
# at the end; the shorter files not named follow in name order and fill the gaps.
LONGEST_FIRST = ["test_pretraining.py", "test_export.py", "test_readme.py", "test_glue.py",
                 "test_encoder.py", "test_squad.py", "test_formats.py", "test_pretraining_beam.py",
                 "test_demo.py", "test_tflite.py", "test_doors.py", "test_race.py", "test_own_data.py",
                 "test_ner.py",
                 "test_huggingface.py", "test_accumulation.py", "test_onnx.py",
                 "test_chinese_release.py", "test_ner_resume.py", "test_tokenization.py"]


def pytest_collection_modifyitems(items):
  order = os.environ.get("ALBERT_TF_TEST_ORDER")
  if order:   # a file of node ids, one per line: tests/run_in_orders.py runs them so
    with open(order, encoding="utf-8") as f:
      wanted = {line.rstrip("\n"): i for i, line in enumerate(f)}
    items.sort(key=lambda item: wanted.get(item.nodeid, len(wanted)))
    return
  rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# ----------------------------------------------------------------------------- stalls

STALL_DUMPS = os.environ.get("ALBERT_TF_STALL_DUMPS")   # a directory: catch stalled tests


@pytest.fixture(autouse=True)
def _catch_stalls(request):
  """With ALBERT_TF_STALL_DUMPS=<dir>: a test still running after ALBERT_TF_STALL_AFTER
  seconds (default 40) gets, every 20 s, its process's stacks (by py-spy when
  installed, else Python's faulthandler; every thread's native frames by gdb when installed) and each thread's CPU
  seconds so far written to <dir>, with the machine's load (docs/testing.md, "Stalls")."""
  if not STALL_DUMPS:
    yield
    return
  import faulthandler  # pylint: disable=import-outside-toplevel
  import shutil  # pylint: disable=import-outside-toplevel
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  import threading  # pylint: disable=import-outside-toplevel
  import time  # pylint: disable=import-outside-toplevel
  os.makedirs(STALL_DUMPS, exist_ok=True)
  after = float(os.environ.get("ALBERT_TF_STALL_AFTER", "40"))
  name = request.node.nodeid.replace("/", "_").replace(":", "_")[:150]
  done = threading.Event()
  started = time.time()

  def threads_cpu():
    lines = []
    for task in sorted(os.listdir("/proc/self/task")):
      try:
        with open(f"/proc/self/task/{task}/stat") as f:
          fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/self/task/{task}/comm") as f:
          comm = f.read().strip()
      except OSError:
        continue
      ticks = os.sysconf("SC_CLK_TCK")
      lines.append(f"{task} {comm}: state {fields[0]} user {int(fields[11]) / ticks:.1f} s "
                   f"system {int(fields[12]) / ticks:.1f} s")
    return "\n".join(lines)

  def watch():
    n = 0
    while not done.wait(after if n == 0 else 20):
      n += 1
      path = os.path.join(STALL_DUMPS, f"{name}.{n}.txt")
      with open(path, "w") as f:
        f.write(f"{request.node.nodeid} at {time.time() - started:.0f} s; load "
                f"{os.getloadavg()}\n\n{threads_cpu()}\n\n")
        f.flush()
        spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
        if spy:
          try:
            out = subprocess.run([spy, "dump", "--native", "--pid", str(os.getpid())],
                                 capture_output=True, text=True, timeout=60)
            f.write(out.stdout + out.stderr)
          except subprocess.TimeoutExpired:
            f.write("py-spy took over 60 s; stopped\n")
        else:
          faulthandler.dump_traceback(file=f, all_threads=True)
        gdb = shutil.which("gdb")
        if gdb:   # every thread's native frames (py-spy shows those with Python frames)
          # Bounded: gdb on a TensorFlow process can take minutes and gigabytes, and
          # the test stays stopped while it reads.
          try:
            out = subprocess.run([gdb, "-p", str(os.getpid()), "-batch", "-ex",
                                  "thread apply all bt 30"], capture_output=True, text=True,
                                 timeout=120)
            f.write("\n\nAll threads, native (gdb):\n" + out.stdout)
          except subprocess.TimeoutExpired:
            f.write("\n\ngdb took over 120 s; stopped\n")
        ps = subprocess.run(["ps", "-eo", "pid,ppid,pcpu,nlwp,etimes,args", "--sort=-pcpu"],
                            capture_output=True, text=True)
        f.write("\n" + "\n".join(ps.stdout.splitlines()[:15]))

  watcher = threading.Thread(target=watch, daemon=True)
  watcher.start()
  yield
  done.set()
