"""Every Python block of the README and of docs/*.md runs as written, on tiny stand-ins for
the paths it names (albert_base/, hub/, out/MRPC/serving)."""

import json
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from albert_tf import AlbertClassifier, AlbertConfig, AlbertEncoder, AlbertTokenClassifier
from albert_tf.export import serving, tagger, tf_hub
from albert_tf.commands import convert, export_tflite, export_onnx
from albert_tf.text.tokenization import FullTokenizer
from common import (TINY, run_script, script_functions, write_classifier_run, write_release,
                    write_wordpiece_vocab)

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README] + sorted((ROOT / "docs").glob("*.md"))


def python_blocks():
  """{"file:line": code} of every ```python block, indented ones (in lists) included."""
  blocks = {}
  for page in PAGES:
    text = page.read_text()
    for match in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S):
      line = text[:match.start()].count("\n") + 1
      blocks[f"{page.relative_to(ROOT)}:{line}"] = textwrap.dedent(match.group(2))
  return blocks


def test_the_readme_and_docs_have_python_blocks():
  places = list(python_blocks())
  assert sum(p.startswith("README.md") for p in places) >= 1
  assert sum(p.startswith("docs/") for p in places) >= 4


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves():
  readme = README.read_text()
  for page in PAGES[1:]:
    assert f"(docs/{page.name})" in readme, f"README.md does not link {page.name}"
  for page in PAGES:
    for target in re.findall(r"\]\(([^)#:]+\.md)\)", page.read_text()):
      assert (page.parent / target).is_file(), f"{page.name} links {target}, which is missing"


@pytest.fixture(scope="module")
def paths(tmp_path_factory, spm_model):
  """What the README's paths stand for, tiny: a released-model directory and its Hugging
  Face form, the two TF-Hub exports and a fine-tuned classifier's serving export."""
  root = tmp_path_factory.mktemp("readme")
  cfg = dict(TINY, vocab_size=1500, max_position_embeddings=128)
  pretrainer = write_release(str(root / "albert_base"), cfg, spm_model)
  tf_hub.export_encoder(pretrainer, str(root / "hub" / "albert_base"), spm_model_file=spm_model)
  tf_hub.export_preprocessor(spm_model, str(root / "hub" / "albert_preprocess"),
                             default_seq_length=128)
  zh = root / "albert_base_zh"
  zh.mkdir()
  write_wordpiece_vocab(zh / "vocab_chinese.txt", ["2008年北京奥运会, Michael Phelps!"])
  classifier = AlbertClassifier(AlbertEncoder(AlbertConfig.from_dict(cfg)), num_classes=2)
  serving.export_classifier(classifier, str(root / "out" / "MRPC" / "serving"),
                           FullTokenizer(spm_model_file=spm_model), 32, ("0", "1"))
  tagger.export_tagger(AlbertTokenClassifier(AlbertEncoder(AlbertConfig.from_dict(cfg)), 3),
                       str(root / "out" / "conll2003" / "serving"),
                       FullTokenizer(spm_model_file=spm_model), 32, 8,
                       ["O", "B-PER", "I-PER"], "IOB2", per_character=False)
  run = write_classifier_run(root / "mrpc_run", classifier, cfg, 32, spm_model_file=spm_model)
  (root / "out" / "mrpc").symlink_to(root / "mrpc_run")   # docs/predict.md's run
  export_tflite.run(export_tflite.TFLiteOptions(model=run, output_file=str(root / "mrpc.tflite")))
  zh_tokenizer = FullTokenizer(vocab_file=str(zh / "vocab_chinese.txt"))
  zh_cfg = dict(cfg, vocab_size=zh_tokenizer.vocab_size)
  zh_classifier = AlbertClassifier(AlbertEncoder(AlbertConfig.from_dict(zh_cfg)), num_classes=2)
  zh_run = write_classifier_run(root / "zh_run", zh_classifier, zh_cfg, 32,
                                vocab_file=str(zh / "vocab_chinese.txt"))
  export_tflite.run(export_tflite.TFLiteOptions(model=zh_run, output_file=str(root / "zh.tflite")))
  convert.run(convert.ConvertOptions(model=str(root / "albert_base"), output_format="hf",
                                     output_dir=str(root / "albert-base-v2")))
  export_onnx.run(export_onnx.OnnxOptions(model=run, output_file=str(root / "onnx" /
                                                                          "mrpc.onnx")))
  return root


def needs_transformers(code: str) -> bool:
  """A block of transformers' (torch's): tests/test_peers.py runs it, in make test-peers."""
  return "from transformers import" in code or "import transformers" in code


@pytest.mark.slow
@pytest.mark.parametrize("place", [p for p, code in python_blocks().items()
                                   if not needs_transformers(code)])
def test_readme_python_block_runs(place, paths, monkeypatch):
  code = python_blocks()[place]
  monkeypatch.chdir(paths)
  exec(compile(code, place, "exec"), {"__name__": "readme"})  # pylint: disable=exec-used
  if 'model.save("classifier")' in code:
    assert (paths / "classifier" / "saved_model.pb").exists()


def script_commands():
  """Every `python X.py --flags...` command of the README and docs/ (the scripts and
  benchmarks/), continuation lines joined: (script, [flag names])."""
  text = "\n".join(page.read_text() for page in PAGES).replace("\\\n", " ")
  return [(m.group(1), re.findall(r"(?:^|\s)--(?:no)?(\w+)",    # (not inside quotes)
                                  re.sub(r"'[^']*'|\"[^\"]*\"", "", m.group(2))))
          for m in re.finditer(r"^\s*python ((?:benchmarks/|hub_export/)?\w+\.py)(.*)$",
                               text, re.M)]


# Reads every script's flags in one process: each script's module is run (not as __main__,
# so nothing but its flag definitions happens), its new flags noted and removed before the
# next. (One `--helpfull` process per script started some 20 TensorFlow imports at once:
# the load of 13 on 2 cores that stalled the other test processes, docs/testing.md.)
_READ_FLAGS = r"""
import json, os, runpy, sys
from absl import app, flags, logging  # the libraries' own flags, before the scripts'
import tensorflow
found = {"": sorted(flags.FLAGS)}
HELPER_DIRS = {os.path.join(os.getcwd(), d) for d in ("benchmarks", "tests", "hub_export")}
for script in sys.argv[1:]:
  before, modules, path = set(flags.FLAGS), set(sys.modules), list(sys.path)
  sys.path.insert(0, os.path.dirname(script))
  runpy.run_path(script, run_name="albert_tf_read_flags")
  sys.path[:] = path
  for name in set(sys.modules) - modules:   # the helpers beside it (benchmarks/benchmarking.py
    where = getattr(sys.modules[name], "__file__", None) or ""   # and tests/common.py)
    if os.path.dirname(where) in HELPER_DIRS:
      del sys.modules[name]
  new = set(flags.FLAGS) - before
  found[script] = sorted(new)
  for name in new:
    delattr(flags.FLAGS, name)
print(json.dumps(found))
"""


def test_the_readme_s_commands_name_real_flags():
  commands = script_commands()
  assert any(script.endswith("benchmark_peers.py") for script, _ in commands)
  assert any(script == "create_pretraining_data.py" for script, _ in commands)
  scripts = sorted({script for script, _ in commands})
  done = subprocess.run([sys.executable, "-c", _READ_FLAGS, *(str(ROOT / s) for s in scripts)],
                        capture_output=True, text=True, timeout=600, cwd=ROOT)
  assert done.returncode == 0, done.stderr[-3000:]
  found = json.loads(done.stdout.strip().splitlines()[-1])
  for script in scripts:   # every script defines flags of its own
    assert found[str(ROOT / script)], script
  for script, names in commands:
    known = set(found[str(ROOT / script)]) | set(found[""])
    for name in names:
      assert name in known, (script, name)


def test_the_peer_benchmark_measures_albert_tf_steps_and_memory(monkeypatch):
  """Its albert_tf side runs here without the peers installed (an ALBERT-base step at b2
  s64, with the memory reading). The activations, ~6 MB a layer and ~75 MB in all, are read
  as the difference of two allocator peaks (a tiny step's and a real one's, each of a shape
  that has run before, alternating twice): 62-69 MB in five processes on an Intel Xeon with
  AMX, where single readings taken before the real shape's first step moved from -41 to +75
  MB. The bound is the order of magnitude (more than one layer's), which a reading that is
  zero, negative or never reset fails."""
  spec = dict(impl="albert_tf", preset="base", batch=2, seq=64, dtype="float32", mode="train",
              steps=1, lengths="fixed", bucket=False, memory=True, recompute=False)
  done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "benchmark_peers.py"),
                         "--worker=" + json.dumps(spec)], capture_output=True, text=True,
                        timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  result = json.loads(done.stdout.strip().splitlines()[-1])
  assert result["seconds_per_step"] > 0 and result["state_bytes"] > 40e6  # weights + slots
  assert result["peak_bytes"] > result["state_bytes"]                     # and the process
  assert result["tokens"] == 2 * 64 and 10e6 < result["activation_bytes"] < 400e6
  # The rest in this process (the train step above keeps a process of its own, for its
  # memory reading): the same-run matmul peak the benchmark divides by, the step's matmuls
  # alone (the bound with all else free), the memory bandwidth, and the parameters the
  # bound's optimizer update counts.
  b = script_functions("benchmarks/benchmark_peers.py")
  monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))   # (its helper, as a script sees it)
  peak = dict(impl="peak", preset="base", batch=1, seq=32, dtype="float32")
  config = AlbertConfig.from_preset("base")
  got = dict(peak=b["run_peak"](peak), matmuls=b["run_matmuls"](dict(peak, impl="matmuls",
                                                                     mode="train")),
             bandwidth=b["run_bandwidth"]({"impl": "bandwidth"}),
             counted=b["parameter_count"](config), built=AlbertEncoder(config).count_params())
  assert got["peak"]["gflops"] > 1 and got["matmuls"]["seconds"] > 0
  assert got["bandwidth"]["memory"] > 1e9 and got["bandwidth"]["cached"] > 1e9
  assert got["counted"] == got["built"] == 11683584


def test_the_real_length_benchmark_runs_run_classifier_at_each_length():
  """Its runs are real run_classifier.py processes (a tiny model, a few steps), each
  reporting its training time and dev accuracy, and an R per padding mode."""
  done = run_script("benchmarks/benchmark_real_length.py", "--preset=tiny", "--steps=4",
                    "--batch_size=4", "--rounds=1",
                    "--runs=128:buckets,64:buckets")   # the smallest table: one R
  assert done.returncode == 0, done.stderr[-3000:]
  runs = re.findall(r"^  (\d+:\w+) +round 1: +([\d.]+) s of training, dev accuracy ([\d.]+)$",
                    done.stdout, re.M)
  assert [r[0] for r in runs] == ["128:buckets", "64:buckets"], done.stdout
  assert all(float(seconds) > 0 and 0 <= float(accuracy) <= 1 for _, seconds, accuracy in runs)
  ratios = re.findall(r"^  R \((buckets|fixed)\) = T64 / T128 = ([\d.]+)$", done.stdout, re.M)
  assert [r[0] for r in ratios] == ["buckets"] and float(ratios[0][1]) > 0, done.stdout


def test_the_step_profile_sums_op_time_by_type():
  """benchmarks/profile_step.py (the README's breakdown of a train step) reads the
  profiler's trace: the forward, backward and update ops are there, the shares of the
  listed op types add up to the whole, and so do those of the step's parts (matmuls,
  XLA kernels, the optimizer's update, other ops)."""
  done = run_script("benchmarks/profile_step.py", "--preset=small", "--batch_size=2",
                    "--seq_length=16", "--steps=1", "--dtype=float32", "--top=50")
  assert done.returncode == 0, done.stderr[-3000:]
  # The op types are listed after "by op type:"; an XLA kernel's name holds a space
  # ("XLA add_multiply_fusion"), the step's parts are listed before.
  by_type = done.stdout.split("by op type:")[-1]
  rows = re.findall(r"^  (\w+(?: \w+)?) +([\d.]+) s +([\d.]+)%$", by_type, re.M)
  ops = [op for op, _, _ in rows]
  # oneDNN's kernels (_Mkl*) where TensorFlow turns it on (CPUs with AVX-512 VNNI, bfloat16
  # or AMX), Eigen's (MatMul, Softmax) on the others, such as AVX2-only CPUs.
  assert {"MatMul", "_MklMatMul"} & set(ops) and {"Softmax", "_MklSoftmax"} & set(ops), ops
  assert {"BiasAddGrad", "AssignSubVariableOp"} <= set(ops), ops
  assert 90 <= sum(float(share) for _, _, share in rows) <= 100.5, done.stdout
  parts = dict((p, float(share)) for p, share in re.findall(
      r"^  ([a-zA-Z ()]+?) +[\d.]+ s +([\d.]+)%$", done.stdout.split("by op type:")[0], re.M))
  assert {"matmul kernels", "optimizer update", "other ops"} <= set(parts), done.stdout
  assert 99.5 <= sum(parts.values()) <= 100.5, done.stdout
  # Issue 86's op classes (docs/performance.md), each op in one, beside the same-run peak.
  by_class = dict((c, float(share)) for c, share in re.findall(
      r"^  ([a-z ]+?) +[\d.]+ s +([\d.]+)%   at the peak", done.stdout, re.M))
  assert list(by_class) == ["large matmuls", "attention matmuls", "casts", "normalization",
                            "activations", "softmax", "gradient sums", "optimizer", "data",
                            "other"], done.stdout
  assert 99.5 <= sum(by_class.values()) <= 100.5, done.stdout
  assert by_class["large matmuls"] > 0 and by_class["attention matmuls"] > 0, by_class
  assert by_class["optimizer"] > 0 and by_class["normalization"] > 0, by_class
  assert re.search(r"^  the step: [\d.]+ s, at the peak [\d.]+ s: \d+% of the peak$",
                   done.stdout, re.M), done.stdout
