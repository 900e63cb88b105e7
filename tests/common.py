"""Tiny configurations and inputs shared by the tests."""

import os
import random

import numpy as np

from albert_tf.data.sample_corpus import TRICKY_TEXTS

# Full sharing (what tf-models-official's AlbertEncoder supports), E != H. Two layers: the
# one block applied twice is all full sharing needs, and each layer costs every trace and
# export of TINY (a fifth of a tiny export's 5 s; docs/testing.md).
TINY = dict(vocab_size=97, embedding_size=8, hidden_size=32, num_hidden_layers=2,
            num_hidden_groups=1, num_attention_heads=4, intermediate_size=48,
            inner_group_num=1, hidden_act="gelu", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, max_position_embeddings=24,
            type_vocab_size=2, initializer_range=0.02)
# Grouped sharing with inner groups: 3 layers over 2 groups (group of layer i = int(i*2/3)
# = 0,0,1: unequal groups, as 5 layers over 2 were, at 6 sub-blocks instead of 10, which
# every trace and export of it pays for), each group applying 2 sub-blocks.
GROUPED = dict(TINY, num_hidden_layers=3, num_hidden_groups=2, inner_group_num=2)
# E == H: the original has no embedding projection.
SQUARE = dict(TINY, embedding_size=32)

# The parity corpus: accents and combining marks, full-width characters,
# whitespace runs, `` and '' quotes, numbers with commas, CJK and emoji, upper
# case, empty strings, and text longer than any seq_length (albert_tf.data.sample_corpus).
CORPUS = list(TRICKY_TEXTS)
BYTES = [b"invalid \xff\xfe utf-8 \xc3\xa9 ok", "unicode é".encode("utf-8"), b"\x80"]


def assert_close(actual, desired, tol, err_msg=""):
  """`actual` equals `desired` within `tol` times desired's scale (its largest magnitude, at
  least 1). A float32 result summed over many terms carries rounding error relative to the
  scale of the terms, not to each element: a near-zero element of a gradient whose others
  reach 100 is off by about 100 times float32's precision, whatever the CPU's summation
  order (an element-wise tolerance fails on one CPU and passes on another)."""
  desired = np.asarray(desired, np.float64)
  scale = max(1.0, float(np.abs(desired).max())) if desired.size else 1.0
  np.testing.assert_allclose(np.asarray(actual, np.float64), desired, rtol=0, atol=tol * scale,
                             err_msg=err_msg)


def random_inputs(cfg, batch=3, seq=11, seed=1, num_masked=4):
  """Int32 inputs with some padding at the end of every row but the first."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, cfg["vocab_size"], size=(batch, seq)).astype(np.int32)
  lengths = [seq] + list(rng.integers(2, seq, size=batch - 1))
  mask = np.array([[1] * n + [0] * (seq - n) for n in lengths], np.int32)
  types = np.array([[0] * (n // 2) + [1] * (seq - n // 2) for n in lengths], np.int32) * mask
  ids = ids * mask
  positions = np.stack([rng.choice(max(n, num_masked), num_masked, replace=False) for n in lengths])
  return dict(input_word_ids=ids, input_mask=mask, input_type_ids=types,
              masked_lm_positions=positions.astype(np.int32))


def encoder_inputs(inputs):
  return {k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}


def fuzz_texts(count=2000, seed=0, words=("the", "assert", "statement", "1,000", "x")):
  """Random Unicode strings as the JSON and TSV readers can hand them over: every plane,
  C0/C1 controls and NUL, combining marks, odd spaces, lone surrogates (JSON's "\\ud800"),
  runs of one repeated character (SentencePiece score ties), ALBERT's quote and digit-comma
  cases, mixed with ordinary words."""
  rng = np.random.default_rng(seed)

  def char():
    r = rng.random()
    if r < 0.15:
      return chr(rng.integers(0, 0x20))                                # C0 controls, NUL
    if r < 0.2:
      return str(rng.choice(["\x7f", "\x85", "\xa0", "\u2028", "\u200b", "\ufeff", "\u3000"]))
    if r < 0.3:
      return chr(rng.integers(0x300, 0x370))                           # combining marks
    if r < 0.35:
      return chr(rng.integers(0xD800, 0xE000))                         # lone surrogates
    if r < 0.45:
      return chr(rng.integers(0x80, 0x800))
    if r < 0.6:
      return chr(rng.integers(0x800, 0x10000))
    if r < 0.7:
      return chr(rng.integers(0x10000, 0x110000))                      # planes 1 to 16
    if r < 0.8:
      return str(rng.choice(list("=*-_~#."))) * int(rng.integers(2, 30))
    return str(rng.choice(list("abcXYZ019 ,.`'\"İΣσςẞ")))

  return [" ".join(str(rng.choice(words)) if rng.random() < 0.5
                   else "".join(char() for _ in range(rng.integers(1, 6)))
                   for _ in range(rng.integers(1, 8)))
          for _ in range(count)]


def split_logits_by_bucketing(run, splits=("dev", "test")):
  """{bucket_by_length: {split: logits}} of a fine-tuning run's restored model, read with
  length bucketing on and off."""
  import dataclasses  # pylint: disable=g-import-not-at-top
  with run.strategy.scope():
    model = run.build_model()
  run.restore_for_inference(model)
  logits = {}
  for bucket in (True, False):
    run.opts = dataclasses.replace(run.opts, bucket_by_length=bucket)
    logits[bucket] = {split: run.split_logits(model, split) for split in splits}
  return logits


def write_off_grid_vocabulary(spm_model, prefix):
  """`spm_model` (create_vocab.py's, scores on its grid) written to `<prefix>.model` with
  each score moved by under 1e-3, as a released model's are: any float32. Returns the
  path."""
  from sentencepiece import sentencepiece_model_pb2  # pylint: disable=import-outside-toplevel
  proto = sentencepiece_model_pb2.ModelProto()
  with open(spm_model, "rb") as f:
    proto.ParseFromString(f.read())
  rng = np.random.default_rng(0)
  for piece in proto.pieces:
    if piece.score:
      piece.score += float(rng.uniform(-1e-3, 1e-3))
  with open(f"{prefix}.model", "wb") as f:
    f.write(proto.SerializeToString())
  return f"{prefix}.model"


def write_wordpiece_vocab(path, texts, max_words=300):
  """A WordPiece vocabulary (BERT's layout: [PAD], [unused0], [UNK], [CLS], [SEP], [MASK],
  then tokens) built from `texts`: every character of their basic tokens alone and as a
  "##" continuation, the most frequent words and some of their prefixes and suffixes, so
  that real words split into several pieces and unknown characters become [UNK]."""
  import collections  # pylint: disable=g-import-not-at-top
  from albert_tf.text.wordpiece import BasicTokenizer  # pylint: disable=g-import-not-at-top
  words = collections.Counter(t for text in texts for t in BasicTokenizer().tokenize(text))
  tokens = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  chars = sorted({c for w in words for c in w})
  unknown, no_continuation = set(chars[3::7]), set(chars[5::9])
  tokens += [c for c in chars if c not in unknown]
  tokens += ["##" + c for c in chars if c not in no_continuation]
  for word, _ in words.most_common(max_words):
    if 1 < len(word) <= 40:
      tokens += [word[: len(word) // 2 + 1], "##" + word[len(word) // 2 + 1:], word]
  seen = set()
  with open(path, "w", encoding="utf-8") as f:
    for t in tokens:
      if t not in seen:
        seen.add(t)
        f.write(t + "\n")
  return str(path)


def write_release(directory, cfg, spm_model):
  """A released model's directory (albert_config.json, 30k-clean.model, an original
  TF1 model.ckpt-best of random weights); returns the AlbertPretrainer it holds."""
  import os  # pylint: disable=g-import-not-at-top
  from albert_tf import AlbertConfig, AlbertPretrainer, save_original_checkpoint  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  AlbertConfig.from_dict(cfg).to_json_file(os.path.join(directory, "albert_config.json"))
  os.symlink(spm_model, os.path.join(directory, "30k-clean.model"))
  pretrainer = AlbertPretrainer(cfg)
  save_original_checkpoint(pretrainer, os.path.join(directory, "model.ckpt-best"))
  return pretrainer


def write_classifier_run(directory, model, cfg, max_seq_length, task="MRPC", **vocabulary):
  """What run_classifier.py (or another fine-tuning script) leaves in --output_dir for
  export, through `albert_tf.runs`: `model`'s weights as model.ckpt-best and the run's
  record (`vocabulary`:
  spm_model_file= or vocab_file=, and what else the run records, e.g. a NER run's labels=)."""
  from albert_tf import runs  # pylint: disable=g-import-not-at-top
  return runs.write_run(str(directory), dict(task=task, model=cfg, hub=None, do_lower_case=True,
                                             max_seq_length=max_seq_length, **vocabulary), model)


def export_tf_models_module(release, checkpoint_name, spm_model_file, out, with_mlm=True):
  """An encoder SavedModel exactly as tf-models-official 2.20 builds the TF-Hub ALBERTs."""
  import os  # pylint: disable=g-import-not-at-top
  import shutil  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official.legacy.albert import configs  # pylint: disable=g-import-not-at-top
  from official.nlp.configs import encoders  # pylint: disable=g-import-not-at-top
  from official.nlp.tools import export_tfhub_lib  # pylint: disable=g-import-not-at-top
  from official.nlp.tools import tf2_albert_encoder_checkpoint_converter as converter  # pylint: disable=g-import-not-at-top
  config = configs.AlbertConfig.from_json_file(os.path.join(release, "albert_config.json"))
  staging = out + ".tf2"
  os.makedirs(os.path.join(staging, "temp_v1"))
  kind = "pretrainer" if with_mlm else "encoder"
  converter.convert_checkpoint(config, os.path.join(staging, "ckpt"),
                               os.path.join(release, checkpoint_name), kind, converted_model=kind)
  encoder_config = encoders.EncoderConfig(type="albert", albert=encoders.AlbertEncoderConfig(
      vocab_size=config.vocab_size, embedding_width=config.embedding_size,
      hidden_size=config.hidden_size, num_layers=config.num_hidden_layers,
      num_attention_heads=config.num_attention_heads, intermediate_size=config.intermediate_size,
      hidden_activation=config.hidden_act, dropout_rate=config.hidden_dropout_prob,
      attention_dropout_rate=config.attention_probs_dropout_prob,
      max_position_embeddings=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size, initializer_range=config.initializer_range))
  export_tfhub_lib.export_model(out, encoder_config=encoder_config,
                                model_checkpoint_path=tf.train.latest_checkpoint(staging),
                                with_mlm=with_mlm, sp_model_file=spm_model_file,
                                do_lower_case=True)
  shutil.rmtree(staging)
  return out


def read_results(output_dir):
  """eval_results.txt of a run: {key: float}, and a run that did not learn its line."""
  with open(os.path.join(output_dir, "eval_results.txt")) as f:
    pairs = [line.strip().split(" = ", 1) for line in f]
  return {k: v if k == "did_not_learn" else float(v) for k, v in pairs}


# ----------------------------------------------------------------------------- NER data

NER_CFG = dict(vocab_size=1500, embedding_size=16, hidden_size=32, num_hidden_layers=2,
               num_hidden_groups=1, num_attention_heads=2, intermediate_size=64,
               max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

PEOPLE = ["alice", "bob", "carol", "david", "emma", "frank", "grace", "henry", "irene", "james"]
PLACES = ["london", "berlin", "tokyo", "madrid", "cairo", "oslo", "lima", "rome", "delhi", "quito"]
EITHER = ["jordan", "paris", "georgia", "florence", "austin", "victoria"]   # PER or LOC by context
SURNAMES = ["smith", "jones", "brown", "taylor"]
PERSON_TEMPLATES = ["{} said that the plan works .", "yesterday {} met the team at the office .",
                    "the report was written by {} ."]
PLACE_TEMPLATES = ["the train to {} leaves at noon .", "she moved to {} last year .",
                   "we flew from {} to the coast ."]


def _tagged(template, words, kind):
  """A template's words and IOB2 tags, `words` (one entity) in place of {}."""
  out = []
  for token in template.split():
    if token == "{}":
      out += [(w, ("B-" if i == 0 else "I-") + kind) for i, w in enumerate(words)]
    else:
      out.append((token, "O"))
  return out


def write_conll(directory, seed=0, sizes=(("train", 300), ("dev", 80), ("test", 40))):
  """CoNLL-2003-format files (token, POS, chunk, tag): person and place names from lists in
  templated sentences, some names a person or a place by context only, some of two
  words, -DOCSTART- lines between documents."""
  rng = random.Random(seed)
  os.makedirs(directory, exist_ok=True)
  for split, count in sizes:
    lines = ["-DOCSTART- -X- -X- O", ""]
    for i in range(count):
      if rng.random() < 0.5:
        name = [rng.choice(PEOPLE + EITHER)]
        if rng.random() < 0.3:
          name.append(rng.choice(SURNAMES))
        sentence = _tagged(rng.choice(PERSON_TEMPLATES), name, "PER")
      else:
        sentence = _tagged(rng.choice(PLACE_TEMPLATES), [rng.choice(PLACES + EITHER)], "LOC")
      lines += [f"{w} NN O {t}" for w, t in sentence] + [""]
      if i % 50 == 49:
        lines += ["-DOCSTART- -X- -X- O", ""]
    with open(os.path.join(directory, f"{split}.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines) + "\n")
  return directory


# ----------------------------------------------------------------------------- scripts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The modules a script's flags are registered to: albert_tf.cli defines a command's flags
# from its options, a script's own DEFINEs run under this name (run_script's run_name), and
# benchmarks/benchmarking.py defines the training benchmarks' shared flags.
_SCRIPT_MODULES = ("albert_tf.cli", "__script__", "benchmarking")


def _remove_script_flags(registry):
  """Deletes the flags the last script defined, and no library's (tensorflow_hub defines
  --tfhub_cache_dir when it is first imported, which may be during a script)."""
  by_module = registry.flags_by_module_dict()
  for name in {f.name for m in _SCRIPT_MODULES for f in by_module.get(m, [])}:
    if name in registry:
      delattr(registry, name)


def run_script(script, *flags, env=None, cwd=None):
  """`python <script> <flags>`, run in this test process: the script's module code (its
  flag definitions), absl's `app.run` parsing `flags`, its `main`, its exit status, stdout
  and stderr, as a `subprocess.CompletedProcess`.

  A new process would import TensorFlow again (~3 CPU-s of the 2-core budget each,
  docs/testing.md). Tests that need a process of their own start one: a kill or a
  signal, a variable a library reads when it is imported (HF_HUB_OFFLINE), two workers,
  or what a whole process prints (`--helpfull`). `env` is set for the run and restored,
  as are the environment, `sys.argv`, `sys.path`, the working directory, the flags, the
  log verbosity and the warning filters.
  """
  import contextlib  # pylint: disable=g-import-not-at-top
  import io  # pylint: disable=g-import-not-at-top
  import runpy  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  import warnings  # pylint: disable=g-import-not-at-top
  from absl import app, flags as absl_flags, logging  # pylint: disable=g-import-not-at-top
  from albert_tf import cli  # pylint: disable=g-import-not-at-top
  registry = absl_flags.FLAGS
  path = os.path.join(ROOT, script)
  argv = [path, *map(str, flags)]
  saved = dict(environ=dict(os.environ), argv=sys.argv, path=list(sys.path), cwd=os.getcwd(),
               verbosity=logging.get_verbosity(),
               original=dict(cli._ORIGINAL))  # pylint: disable=protected-access
  out, err = io.StringIO(), io.StringIO()
  code = 0
  try:
    _remove_script_flags(registry)
    registry.unparse_flags()
    os.environ.update({k: str(v) for k, v in (env or {}).items()})
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(path))   # as `python <script>` does: its helpers import
    if cwd:
      os.chdir(cwd)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
        warnings.catch_warnings():
      try:
        module = runpy.run_path(path, run_name=_SCRIPT_MODULES[1])
        app.run(module["main"], argv=argv)
      except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
          print(e.code, file=sys.stderr)
  finally:
    os.environ.clear()
    os.environ.update(saved["environ"])
    sys.argv, sys.path[:] = saved["argv"], saved["path"]
    os.chdir(saved["cwd"])
    logging.set_verbosity(saved["verbosity"])
    cli._ORIGINAL.clear()   # the script's original flags, which go with its flags  # pylint: disable=protected-access
    cli._ORIGINAL.update(saved["original"])  # pylint: disable=protected-access
    _remove_script_flags(registry)
  return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def script_functions(script):
  """The top-level names of `script` (its functions, to call in this process), its module
  code run as `run_script` runs it, with its helpers importable and its flags removed
  again (what the tests call takes its settings as arguments)."""
  import runpy  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  from absl import flags as absl_flags  # pylint: disable=g-import-not-at-top
  path = os.path.join(ROOT, script)
  sys.path.insert(0, os.path.dirname(path))
  try:
    return runpy.run_path(path, run_name=_SCRIPT_MODULES[1])
  finally:
    sys.path.remove(os.path.dirname(path))
    _remove_script_flags(absl_flags.FLAGS)

