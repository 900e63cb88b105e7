"""The package's shape: folders import only what their layer may, scripts keep the
original flag names, and every flag is generated from its options dataclass."""

import ast
import dataclasses
import json
import os
import pathlib
import re
import subprocess
import sys

from absl import flags
import pytest

from albert_tf import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "albert_tf"

# What each folder may import from albert_tf (besides itself), as docs/architecture.md's table says.
ALLOWED = {
    "modeling": {"files"},
    "text": {"files", "cli"},
    "data": {"text", "files", "cli", "progress"},
    "training": {"modeling", "files", "progress"},
    "formats": {"modeling", "text", "files"},
    # What a classifier learns (single-label, multi-label, regression): its targets, loss,
    # metrics and outputs, over the data it reads and the metrics it computes.
    "problems.py": {"data", "training", "files"},
    "export": {"problems", "formats", "modeling", "text", "data", "cli", "files", "progress"},
    # The owner of a trained run's record: below the tasks that write it, above what it
    # rebuilds a run's model from.
    "runs.py": {"problems", "modeling", "text", "data", "formats", "export", "training", "files",
                "cli", "console"},
    # The one resolver of "the model to read": a model directory or name (formats), or a
    # run (runs), with its vocabulary checked once.
    "sources.py": {"runs", "modeling", "text", "data", "formats", "files", "cli"},
    # A run's answers for new text: through the run's owner, never a reader of its own.
    "predictor.py": {"runs", "problems", "export", "modeling", "text", "data", "files",
                     "progress"},
    # The commands that are not training tasks read runs and models and write exports; no
    # training task is theirs to import, nor they a task's.
    "commands": {"sources", "runs", "problems", "predictor", "export", "formats", "modeling", "text", "data", "training", "files",
                 "cli", "progress", "console"},
    "files.py": set(),
    # What a command prints (console.py: no TensorFlow), under the flags' helper (cli.py).
    "console.py": set(),
    "cli.py": {"console"},
    "progress.py": set(),
}

# The flags each script had before its flags were generated, and every flag of the
# google-research/albert script it stands for (some mapped or noted, see cli.Original).
ORIGINAL_FLAGS = {
    "create_vocab.py": "input_file model_prefix vocab_size input_sentence_size character_coverage "
                       "overwrite",
    "create_pretraining_data.py": "input_file output_file spm_model_file vocab_file do_lower_case "
                                  "do_whole_word_mask do_permutation favor_shorter_ngram "
                                  "random_next_sentence max_seq_length ngram "
                                  "max_predictions_per_seq random_seed dupe_factor masked_lm_prob "
                                  "short_seq_prob num_workers overwrite input_file_mode",
    "run_pretraining.py": "input_file output_dir init_checkpoint albert_config_file do_train do_eval "
                          "train_batch_size eval_batch_size max_seq_length max_predictions_per_seq "
                          "optimizer learning_rate poly_power num_train_steps num_warmup_steps "
                          "start_warmup_step save_checkpoints_steps keep_checkpoint_max "
                          "max_eval_steps distribution_strategy tpu dtype jit_compile seed "
                          "log_steps export_original_checkpoint use_tpu tpu_name tpu_zone gcp_project master num_tpu_cores iterations_per_loop init_from_group0 masked_lm_budget",
    "run_classifier.py": "data_dir output_dir task_name albert_config_file init_checkpoint "
                         "albert_hub_module_handle spm_model_file do_lower_case max_seq_length "
                         "do_train do_eval do_predict train_batch_size eval_batch_size "
                         "predict_batch_size learning_rate train_step warmup_step "
                         "save_checkpoints_steps keep_checkpoint_max optimizer dropout_prob "
                         "cached_dir export_dir skip_malformed_rows distribution_strategy dtype "
                         "seed log_steps vocab_file threshold_to_export use_tpu tpu_name tpu_zone gcp_project master num_tpu_cores iterations_per_loop",
    "run_squad.py": "output_dir albert_config_file init_checkpoint albert_hub_module_handle "
                    "spm_model_file do_lower_case train_file predict_file train_feature_file "
                    "predict_feature_file predict_feature_left_file version_2_with_negative "
                    "max_seq_length doc_stride max_query_length do_train do_predict "
                    "train_batch_size predict_batch_size learning_rate num_train_epochs "
                    "warmup_proportion save_checkpoints_steps keep_checkpoint_max optimizer "
                    "n_best_size max_answer_length start_n_top end_n_top dropout_prob "
                    "null_score_diff_threshold distribution_strategy dtype seed log_steps vocab_file use_tpu tpu_name tpu_zone gcp_project master num_tpu_cores iterations_per_loop",
    "run_race.py": "data_dir output_dir albert_config_file init_checkpoint albert_hub_module_handle "
                   "spm_model_file do_lower_case max_seq_length max_qa_length do_train do_eval "
                   "do_predict train_batch_size eval_batch_size predict_batch_size learning_rate "
                   "train_step warmup_step save_checkpoints_steps num_keep_checkpoint high_only "
                   "middle_only optimizer dropout_prob cached_dir distribution_strategy dtype "
                   "seed log_steps task_name vocab_file train_file eval_file predict_file use_tpu tpu_name tpu_zone gcp_project master num_tpu_cores iterations_per_loop",
    # No original: the flags issue 52 asks for (the other fine-tuning scripts' own).
    "run_ner.py": "data_dir output_dir do_train do_eval do_predict max_seq_length "
                  "train_batch_size learning_rate train_step warmup_step save_checkpoints_steps "
                  "albert_directory albert_config_file init_checkpoint albert_hub_module_handle "
                  "spm_model_file vocab_file do_lower_case dtype recompute "
                  "gradient_accumulation_steps bucket_by_length tag_scheme doc_stride seed "
                  "export_dir",
    "hub_export/export.py": "albert_directory checkpoint_name albert_config_file init_checkpoint "
                            "spm_model_file vocab_file export_path export_preprocessing_path do_lower_case "
                            "default_seq_length overwrite use_einsum",
}


def _imported_parts(path: pathlib.Path):
  """The top-level albert_tf parts (folder or module) that a file imports."""
  parts = set()
  for node in ast.walk(ast.parse(path.read_text())):
    names = []
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    elif isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    for name in names:
      pieces = name.split(".")
      if pieces[0] == "albert_tf" and len(pieces) > 1:
        parts.add(pieces[1])
  return parts


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_layer_imports_only_what_it_may(part):
  target = PACKAGE / part
  files = [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))
  assert files
  own = part[:-3] if part.endswith(".py") else part
  for path in files:
    used = {p.removesuffix(".py") for p in _imported_parts(path)} - {own}
    allowed = {a.removesuffix(".py") for a in ALLOWED[part]}
    assert used <= allowed, f"{path.relative_to(ROOT)} imports albert_tf.{used - allowed}"


def test_the_benchmarks_import_their_helper_without_editing_sys_path():
  """benchmarks/ holds speed and memory benchmarks and profilers, which share
  benchmarks/benchmarking.py as `import benchmarking` (Python puts a script's folder first
  on sys.path) and import albert_tf as installed; the correctness checks against the peers
  are tests (tests/test_peers.py)."""
  scripts = sorted((ROOT / "benchmarks").glob("*.py"))
  assert (ROOT / "benchmarks" / "benchmarking.py") in scripts
  for path in scripts:
    text = path.read_text(encoding="utf-8")
    assert "sys.path" not in text, path.name
    assert not re.search(r"^\s*(import common|from common import)", text, re.M), path.name
  assert not [p.name for p in scripts if p.name.startswith(("parity_", "compare_"))]


def _python_files(root: pathlib.Path):
  """The repository's .py files, not walking into the hidden and built directories
  (.venv holds some 100,000 files: a walk of it took 7 s of the suite)."""
  for directory, subdirectories, files in os.walk(root):
    subdirectories[:] = [d for d in subdirectories
                         if not d.startswith((".", "build", "demo_output", "__pycache__"))]
    yield from (pathlib.Path(directory) / f for f in files if f.endswith(".py"))


def test_one_module_owns_a_run_s_record():
  """albert_tf/runs.py is the only code that names a run's record file: every other module
  (the package, the scripts, the benchmarks, the tests) reads and writes a run through it."""
  record = "run_config" + ".json"
  naming = sorted(str(path.relative_to(ROOT)) for path in _python_files(ROOT)
                  if record in path.read_text(encoding="utf-8"))
  assert naming == ["albert_tf/runs.py"], naming


def test_no_layout_module_imports_another():
  """One module per model layout: each maps its own names onto the original ones, and only
  the dispatcher (formats/__init__.py) knows them all."""
  layouts = {"tf1", "huggingface", "tf_hub", "keras_hub", "native"}
  for name in sorted(layouts):
    tree = ast.parse((PACKAGE / "formats" / f"{name}.py").read_text())
    imported = set()
    for node in ast.walk(tree):
      if isinstance(node, ast.ImportFrom) and node.module:
        imported |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
      elif isinstance(node, ast.Import):
        imported |= {a.name for a in node.names}
    others = {f"albert_tf.formats.{o}" for o in layouts - {name}}
    assert not imported & others, f"formats/{name}.py imports {imported & others}"
    assert "albert_tf.formats" not in imported, f"formats/{name}.py imports the dispatcher"


def import_graph(package: pathlib.Path = PACKAGE):
  """{module: the package's modules it imports}, every import counted, the lazy ones inside
  functions too. `from a.b import c` is a.b.c when that is a module, else a.b (its
  __init__); a name below a module (`import a.b.c.d`, d not a module) is its module."""
  root = package.parent
  modules = {}
  for path in package.rglob("*.py"):
    parts = list(path.relative_to(root).with_suffix("").parts)
    modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  graph = {}
  for name, path in modules.items():
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        targets |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                    else node.module for a in node.names}
      elif isinstance(node, ast.Import):
        targets |= {a.name for a in node.names}
    resolved = set()
    for target in targets:
      while target and target not in modules:
        target = target.rpartition(".")[0]
      if target and target != name:
        resolved.add(target)
    graph[name] = resolved
  return graph


def import_circles(graph):
  """Every group of modules that import one another, directly or through others (the
  strongly connected components of more than one module, Tarjan's algorithm)."""
  index, low, stack, on_stack, circles = {}, {}, [], set(), []

  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in graph.get(v, ()):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = set()
      while True:
        w = stack.pop()
        on_stack.discard(w)
        component.add(w)
        if w == v:
          break
      if len(component) > 1:
        circles.append(sorted(component))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return circles


def test_every_command_is_in_the_table_on_path_and_behind_its_script():
  """albert_tf/commands/table.py lists every root script; each script, demo.py and the
  [project.scripts] entry points read it, and `pip install` put the entry points beside
  this Python, where one runs as its script does."""
  import tomllib  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import table  # pylint: disable=import-outside-toplevel
  scripts = sorted(str(p.relative_to(ROOT)) for p in list(ROOT.glob("*.py"))
                   + list((ROOT / "hub_export").glob("*.py")) if p.name != "demo.py")
  assert sorted(c.script for c in table.COMMANDS.values()) == scripts
  for name, command in table.COMMANDS.items():
    text = (ROOT / command.script).read_text(encoding="utf-8")
    assert f'table.main("{name}")' in text, command.script
    options, run, _ = command.load()
    assert dataclasses.is_dataclass(options) and callable(run)
  entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
  assert entry == {name: f"albert_tf.commands.table:{name}" for name in table.COMMANDS}
  assert "table.COMMANDS" in (ROOT / "demo.py").read_text(encoding="utf-8")
  # The entry point on PATH prints what the script's --helpfull prints: every original flag
  # (the one-process reading of the `helpfull` fixture below, checked against a real one).
  on_path = pathlib.Path(sys.executable).parent / "run_classifier"
  done = subprocess.run([str(on_path), "--helpfull"], capture_output=True, text=True,
                        timeout=300, cwd=ROOT)    # (absl's --helpfull ends with status 1)
  printed = done.stdout + done.stderr
  for flag in ORIGINAL_FLAGS["run_classifier.py"].split():
    assert f"--{flag}:" in printed or f"--[no]{flag}:" in printed, (flag, done.stderr[-2000:])
  # `python -m albert_tf <command>` runs any command of the table, with no script.
  done = subprocess.run([sys.executable, "-m", "albert_tf", "create_vocab", "--helpfull"],
                        capture_output=True, text=True, timeout=300, cwd="/")
  assert "--vocab_size" in done.stdout and "--model_prefix" in done.stdout, done.stderr[-2000:]


def _rooms_imports():
  """{room: the rooms it imports} of albert_tf's folders and modules (the compatibility
  aliases and __init__.py aside), from the code."""
  rooms = {}
  for path in sorted(PACKAGE.iterdir()):
    if path.name.startswith(("_", ".")) or path.name in ("packing.py", "preprocessing.py",
                                                        "tokenization.py"):
      continue
    if path.is_dir() or path.suffix == ".py":
      name = path.stem
      files = [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
      rooms[name] = {p.removesuffix(".py") for f in files for p in _imported_parts(f)} - {name}
  return rooms


def test_the_architecture_page_draws_the_real_import_graph():
  """docs/architecture.md's drawing: one line a room, `floor N  room -> what it imports`;
  the imports are the code's, and each room's floor is one above the highest it imports."""
  text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
  drawn = {}
  for floor, room, imports in re.findall(r"^floor +(\d+) +(\S+?)/? +->(.*)$", text, re.M):
    drawn[room] = (int(floor), set(imports.split()))
  rooms = _rooms_imports()
  assert {room: imports for room, (_, imports) in drawn.items()} == rooms
  for room, (floor, imports) in drawn.items():
    assert floor == 1 + max((drawn[i][0] for i in imports), default=0), room


def test_no_two_modules_import_each_other_directly_or_through_others():
  """No circle of imports between albert_tf's modules, lazy imports included: each module
  can be read (and imported) with only what it names below it."""
  assert import_circles(import_graph()) == []


def test_the_circle_finder_finds_circles(tmp_path):
  """The check above can fail: a lazy import that closes a circle through a third module,
  and a `from package import module` one, are found; a tree without one passes."""
  package = tmp_path / "pkg"
  (package / "sub").mkdir(parents=True)
  (package / "__init__.py").write_text("")
  (package / "sub" / "__init__.py").write_text("")
  (package / "a.py").write_text("from pkg.sub import b\n")
  (package / "sub" / "b.py").write_text("import pkg.c\n")
  (package / "c.py").write_text("def f():\n  from pkg import a\n")
  (package / "d.py").write_text("from pkg import a, c\n")
  assert import_circles(import_graph(package)) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
  (package / "c.py").write_text("def f():\n  import json\n")
  assert import_circles(import_graph(package)) == []


def test_only_keras_hub_and_keras3_modules_import_keras_3():
  for path in sorted(PACKAGE.rglob("*.py")):
    if "keras_hub" in path.name or "keras3" in path.name:
      continue
    for node in ast.walk(ast.parse(path.read_text())):
      names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
               [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
      assert not [n for n in names if n.split(".")[0] in ("keras", "keras_hub")], path


def test_original_module_paths_are_the_text_modules():
  import albert_tf.packing  # pylint: disable=import-outside-toplevel
  import albert_tf.tokenization  # pylint: disable=import-outside-toplevel
  from albert_tf.text import packing, tokenization  # pylint: disable=import-outside-toplevel
  assert albert_tf.tokenization is tokenization and albert_tf.packing is packing
  assert albert_tf.tokenization.FullTokenizer is tokenization.FullTokenizer


# Each script's --helpfull text (`FLAGS.get_help()`, what --helpfull prints), all read in one
# process: the script's module is run (not as __main__: only its flags are defined), its
# help taken, its flags removed before the next. One `--helpfull` process per script cost
# a TensorFlow import each (7 processes, about 40 s of the suite).
_HELP = r"""
import json, os, runpy, sys
from absl import app, flags, logging  # the libraries' own flags, before the scripts'
import tensorflow
found = {}
for script in sys.argv[1:]:
  before, path = set(flags.FLAGS), list(sys.path)
  sys.path.insert(0, os.path.dirname(script))
  runpy.run_path(script, run_name="albert_tf_help")
  sys.path[:] = path
  found[script] = flags.FLAGS.get_help()
  for name in set(flags.FLAGS) - before:
    delattr(flags.FLAGS, name)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def helpfull():
  """{script: its --helpfull text}."""
  scripts = sorted(ORIGINAL_FLAGS)
  done = subprocess.run([sys.executable, "-c", _HELP, *(str(ROOT / s) for s in scripts)],
                        capture_output=True, text=True, timeout=300, cwd=ROOT)
  assert done.returncode == 0, done.stderr[-3000:]
  found = json.loads(done.stdout.strip().splitlines()[-1])
  return {s: found[str(ROOT / s)] for s in scripts}


@pytest.mark.parametrize("script", sorted(ORIGINAL_FLAGS))
def test_scripts_keep_the_original_flags_generated_from_one_dataclass(script, helpfull):
  """--helpfull lists every original flag; nothing besides `cli.define_flags` declares one."""
  source = (ROOT / script).read_text()
  assert "DEFINE_" not in source and "table.main(" in source
  listed = helpfull[script]
  missing = [f for f in ORIGINAL_FLAGS[script].split()
             if f"--{f}:" not in listed and f"--[no]{f}:" not in listed]
  assert not missing, f"{script} lacks --{', --'.join(missing)}"


def test_flags_take_names_defaults_and_help_from_the_fields():
  @dataclasses.dataclass(kw_only=True)
  class Options:
    name: str = cli.option(help="A required path.")
    steps: int = cli.option(100, "Steps.")
    rate: float = cli.option(0.5, "Rate.")
    on: bool = cli.option(True, "Switch.")
    kind: str = cli.option("a", "Kind.", choices=("a", "b"))
    size: int = cli.option(8, "Size.", at_least=1)

  values = flags.FlagValues()
  cli.define_flags(Options, values)
  values(["prog", "--name=x", "--steps=7", "--noon", "--kind=b"])
  assert cli.options_from_flags(Options, values) == Options(name="x", steps=7, on=False, kind="b")
  assert values["rate"].default == 0.5 and values["steps"].help == "Steps."
  assert values["size"].help == "Size. (at least 1)"   # --helpfull shows each range
  assert values["name"].default is None
  with pytest.raises(flags.IllegalFlagValueError):
    values["kind"].parse("c")
  unset = flags.FlagValues()
  cli.define_flags(Options, unset)
  with pytest.raises(flags.IllegalFlagValueError):
    unset(["prog"])  # --name is required


def test_pretraining_flags_and_options_agree():
  """The drift the generated flags removed: --log_steps 100 vs 10, --do_train True vs False."""
  from albert_tf.tasks import pretraining  # pylint: disable=import-outside-toplevel
  values = flags.FlagValues()
  cli.define_flags(pretraining.PretrainingOptions, values)
  opts = pretraining.PretrainingOptions(input_file="x", output_dir="y", albert_config_file="z")
  required = {"input_file", "output_dir", "albert_config_file"}
  for field in dataclasses.fields(opts):
    if field.name not in required:
      assert values[field.name].default == getattr(opts, field.name), field.name
  assert opts.log_steps == 100 and opts.do_train is False


def test_original_only_flags_are_mapped_noted_or_refused(capsys):
  from albert_tf.tasks import classification, pretraining  # pylint: disable=import-outside-toplevel
  values = flags.FlagValues()
  cli.define_flags(classification.ClassifierOptions, values,
                   original=classification.ORIGINAL_FLAGS)
  values(["run_classifier.py", "--output_dir=o", "--data_dir=d", "--task_name=MRPC",
          "--use_tpu", "--tpu_name=grpc://10.0.0.2:8470", "--tpu_zone=us-central1-b",
          "--num_tpu_cores=32", "--iterations_per_loop=100", "--vocab_file=vocab.txt"])
  overrides = cli.original_flag_overrides(values)
  assert overrides == dict(distribution_strategy="tpu", tpu="grpc://10.0.0.2:8470")
  opts = cli.options_from_flags(classification.ClassifierOptions, values, overrides)
  assert (opts.distribution_strategy, opts.tpu, opts.tpu_zone) == \
      ("tpu", "grpc://10.0.0.2:8470", "us-central1-b")
  out = capsys.readouterr().out.splitlines()
  for name in ("num_tpu_cores", "iterations_per_loop"):
    assert [line for line in out if line.startswith(f"--{name}: ignored")], (name, out)
  assert opts.vocab_file == "vocab.txt"   # a WordPiece vocabulary, as the original takes it
  assert "--use_tpu: --distribution_strategy=tpu --tpu=grpc://10.0.0.2:8470" in out

  values = flags.FlagValues()
  cli.define_flags(pretraining.PretrainingOptions, values, original=pretraining.ORIGINAL_FLAGS)
  values(["run_pretraining.py", "--output_dir=o", "--input_file=x", "--albert_config_file=c",
          "--masked_lm_budget=0.1", "--master=grpc://1.2.3.4:8470"])
  with pytest.raises(ValueError, match="--masked_lm_budget=0.1 is not supported"):
    cli.original_flag_overrides(values)
