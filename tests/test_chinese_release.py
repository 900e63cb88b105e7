"""A release shaped like albert_base_zh: albert_config.json, model.ckpt-best in the original
TF1 names and a WordPiece vocab_chinese.txt, through run_classifier.py --vocab_file and
hub_export/export.py --albert_directory, then back through hub.KerasLayer."""

import csv
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub

import original_albert
from albert_tf import AlbertConfig, AlbertPretrainer, runs
from albert_tf.formats import tf_hub as loading
from albert_tf.formats import load_original_checkpoint
from albert_tf.tasks import base
from albert_tf.text.tokenization import FullTokenizer
from common import assert_close, encoder_inputs, run_script, write_wordpiece_vocab

CFG = dict(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_hidden_groups=1,
           num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
SEQ = 48
INDEED, HOWEVER = "\u786e\u5b9e", "\u4f46\u662f"     # 确实, 但是


def _sentence(rng, chars, words):
  """Runs of CJK characters (no spaces, as Chinese is written) with some English words."""
  parts = []
  for _ in range(rng.integers(2, 5)):
    parts.append("".join(rng.choice(chars, rng.integers(2, 7))))
    if rng.random() < 0.4:
      parts.append(f" {rng.choice(words)} ")
  return "".join(parts).strip()


def write_chinese_task(directory, seed=0, sizes=(("train", 600), ("dev", 200), ("test", 50))):
  """A learnable MRPC-format task in Chinese: positive when sentence 2 holds 确实 ("indeed"),
  negative when it holds 但是 ("however"); 68% positive."""
  rng = np.random.default_rng(seed)
  chars = [chr(c) for c in range(0x4E00, 0x4E00 + 400, 2)]
  words = ["Python", "module", "class", "return", "Beijing", "2008", "Caf\u00e9", "data"]
  texts = []
  os.makedirs(directory, exist_ok=True)
  for split, count in sizes:
    with open(os.path.join(directory, f"{split}.tsv"), "w", encoding="utf-8") as f:
      f.write(("index" if split == "test" else "Quality") + "\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
      for i in range(count):
        label = int(rng.random() < 0.68)
        a, b = _sentence(rng, chars, words), _sentence(rng, chars, words)
        cut = int(rng.integers(len(b) + 1))
        b = b[:cut] + (INDEED if label else HOWEVER) + b[cut:]
        texts += [a, b]
        f.write(f"{i if split == 'test' else label}\t{2 * i}\t{2 * i + 1}\t{a}\t{b}\n")
  return texts


@pytest.fixture(scope="module")
def release(tmp_path_factory):
  root = tmp_path_factory.mktemp("chinese")
  texts = write_chinese_task(str(root / "MRPC"))
  albert = root / "albert_base_zh"
  albert.mkdir()
  vocab_file = write_wordpiece_vocab(albert / "vocab_chinese.txt", texts)
  with open(vocab_file, "a", encoding="utf-8") as f:        # the keywords are never [UNK]
    known = set(open(vocab_file, encoding="utf-8").read().split("\n"))
    f.writelines(c + "\n" for c in sorted(set(INDEED + HOWEVER)) if c not in known)
  config = AlbertConfig.from_dict(dict(CFG, vocab_size=FullTokenizer(vocab_file=vocab_file).vocab_size))
  config.to_json_file(str(albert / "albert_config.json"))
  cfg = config.to_dict()
  original_albert.write_checkpoint(str(albert / "model.ckpt-best"),
                                   original_albert.random_weights(cfg, scale=0.05))
  return root


@pytest.mark.learning
def test_run_classifier_fine_tunes_with_vocab_file(release, tmp_path, learning_seed):
  albert, out = release / "albert_base_zh", tmp_path / "mrpc"
  flags = dict(task_name="MRPC", data_dir=release / "MRPC", output_dir=out,
               vocab_file=albert / "vocab_chinese.txt",
               albert_config_file=albert / "albert_config.json",
               init_checkpoint=albert / "model.ckpt-best", max_seq_length=SEQ,
               train_batch_size=16, eval_batch_size=32, predict_batch_size=32,
               learning_rate=2e-3, train_step=240, warmup_step=24, save_checkpoints_steps=80,
               do_train=True, do_eval=True, do_predict=True, export_dir=out / "serving",
               seed=learning_seed, noprogress=None)
  result = run_script("run_classifier.py", *(f"--{k}" if v is None else f"--{k}={v}"
                                              for k, v in flags.items()))
  assert result.returncode == 0, result.stderr[-3000:]
  with open(out / "eval_results.txt") as f:
    evaluation = {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}
  print("WordPiece MRPC-format dev:", evaluation)
  assert evaluation["majority_baseline_accuracy"] < 0.75
  assert evaluation["accuracy"] >= 0.95
  record = runs.read_record(str(out))
  assert json.dumps(record).count(str(albert / "vocab_chinese.txt")) >= 1

  # The serving SavedModel tokenizes with the WordPiece vocabulary in-graph.
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  serving = tf.saved_model.load(str(out / "serving"))
  assert os.path.basename(serving.vocab_file.asset_path.numpy().decode()) == "vocab_chinese.txt"
  with open(release / "MRPC" / "test.tsv", encoding="utf-8") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:9]
  served = serving.signatures["serving_default"](sentence1=tf.constant([r[3] for r in rows]),
                                                 sentence2=tf.constant([r[4] for r in rows]))
  with open(out / "MRPC.tsv") as f:
    submitted = [r[1] for r in list(csv.reader(f, delimiter="\t"))[1:9]]
  assert [s.decode() for s in served["labels"].numpy()] == submitted
  assert [s.decode() for s in served["labels"].numpy()] == \
      ["1" if INDEED in r[4] else "0" for r in rows]


def test_export_recognizes_the_release_and_reloads_through_keras(release, tmp_path):
  albert = release / "albert_base_zh"
  result = run_script("hub_export/export.py", f"--albert_directory={albert}",
                      f"--export_path={tmp_path / 'enc'}",
                      f"--export_preprocessing_path={tmp_path / 'pre'}", "--default_seq_length=32")
  assert result.returncode == 0, result.stderr[-3000:]
  # Both directories can move: the vocabulary is an asset inside each.
  for name in ("enc", "pre"):
    shutil.move(str(tmp_path / name), str(tmp_path / f"moved_{name}"))
  import tensorflow_text  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
  preprocessor = hub.load(str(tmp_path / "moved_pre"))
  assert os.path.basename(preprocessor.vocab_file.asset_path.numpy().decode()) == \
      "vocab_chinese.txt"
  tokenizer = FullTokenizer(vocab_file=str(albert / "vocab_chinese.txt"))
  special = {k: int(v) for k, v in preprocessor.tokenize.get_special_tokens_dict().items()}
  assert special == dict(vocab_size=tokenizer.vocab_size, start_of_sequence_id=tokenizer.cls_id,
                         end_of_segment_id=tokenizer.sep_id, padding_id=0,
                         mask_id=tokenizer.mask_id)
  assert (tokenizer.inv_vocab[special["start_of_sequence_id"]],
          tokenizer.inv_vocab[special["padding_id"]]) == ("[CLS]", "[PAD]")
  run = "".join([c for c in map(chr, range(0x4E00, 0x4E40, 2)) if c in tokenizer.vocab][:5])
  texts = [f"{run}Python{INDEED}module {run}", "Caf\u00e9\u3000\u5728\u5317\u4eac\uff01"]
  ids = preprocessor.tokenize(tf.constant(texts)).to_list()
  assert ids == [tokenizer.encode(t) for t in texts]
  assert tokenizer.unk_id not in ids[0] and len(ids[0]) >= 8

  encoder = hub.KerasLayer(str(tmp_path / "moved_enc"), trainable=True)
  inputs = preprocessor(tf.constant(texts))
  cfg = AlbertConfig.from_json_file(str(albert / "albert_config.json")).to_dict()
  model = AlbertPretrainer(cfg)
  load_original_checkpoint(model, str(albert / "model.ckpt-best"))
  got, want = encoder(inputs), model(encoder_inputs({k: v.numpy() for k, v in inputs.items()}))
  for key in ("pooled_output", "sequence_output"):
    assert_close(got[key].numpy(), want[key].numpy(), 1e-5)
  # --vocab_file=from_tf_hub takes the vocabulary back from the encoder export.
  source = base.resolve_model_source(base.ModelOptions(
      albert_hub_module_handle=str(tmp_path / "moved_enc"), vocab_file="from_tf_hub"), SEQ)
  assert source.tokenizer.spm_model_file is None
  assert source.tokenizer.encode(texts[0]) == ids[0]
  with pytest.raises(ValueError, match="WordPiece vocabulary .* use --vocab_file=from_tf_hub"):
    loading.spm_model_from_hub(str(tmp_path / "moved_enc"), "hub/albert_base_zh")


def test_exactly_one_vocabulary_flag(release):
  albert = release / "albert_base_zh"
  common = dict(albert_config_file=str(albert / "albert_config.json"))
  for vocab in (dict(), dict(vocab_file=str(albert / "vocab_chinese.txt"),
                             spm_model_file="30k-clean.model")):
    with pytest.raises(ValueError, match="exactly one of --spm_model_file .* and --vocab_file"):
      base.resolve_model_source(base.ModelOptions(**common, **vocab), SEQ)
  with pytest.raises(FileNotFoundError, match="--vocab_file=nowhere.txt not found"):
    base.resolve_model_source(base.ModelOptions(**common, vocab_file="nowhere.txt"), SEQ)
  source = base.resolve_model_source(
      base.ModelOptions(**common, vocab_file=str(albert / "vocab_chinese.txt")), SEQ)
  assert source.tokenizer.vocab_file.endswith("vocab_chinese.txt")
  assert source.record()["vocab_file"] == str(albert / "vocab_chinese.txt")
