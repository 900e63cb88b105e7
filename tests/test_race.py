"""RACE: the reader on the download's layout (and all.txt), blank filling and truncation,
bad input, the head's original names, and a tiny model that learns a generated set."""

import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from albert_tf import (AlbertConfig, AlbertMultipleChoice, AlbertPretrainer, load_checkpoint,
                       save_original_checkpoint)
from albert_tf.commands import predict
from albert_tf.tasks import multiple_choice
from albert_tf.data import race, sample_corpus
from albert_tf.text.tokenization import FullTokenizer
from common import assert_close, run_script, split_logits_by_bucketing


ARTICLE = {"article": "Tom has a red bike. He rides it to school every day.",
           "questions": ["What colour is Tom's bike?", "Tom rides his bike to _ ."],
           "options": [["Blue", "Red", "Green", "Black"], ["work", "the park", "school", "town"]],
           "answers": ["B", "C"], "id": "middle42.txt"}


def _write_race(root, files):
  """files: {(split, level, name): object or raw text}."""
  for (split, level, name), content in files.items():
    directory = os.path.join(root, "RACE", split, level)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
      f.write(content if isinstance(content, str) else json.dumps(content))
  return str(root)


def test_reader_reads_the_download_layout_and_all_txt(tmp_path):
  high = dict(ARTICLE, id="high7.txt", answers=["A", "D"])
  root = _write_race(tmp_path, {("dev", "middle", "42.txt"): ARTICLE,
                                ("dev", "high", "7.txt"): high})
  examples = race.read_examples(root, "dev")
  assert [(e.qas_id, e.level, e.label) for e in examples] == [
      ("middle42.txt-0", "middle", 1), ("middle42.txt-1", "middle", 2),
      ("high7.txt-0", "high", 0), ("high7.txt-1", "high", 3)]
  assert examples[0].options == ["Blue", "Red", "Green", "Black"]
  assert [e.level for e in race.read_examples(root, "dev", race.levels_from_flags(True, False))
          ] == ["high", "high"]
  # --data_dir may be the RACE folder itself; a level may be one all.txt of JSON lines.
  assert len(race.read_examples(os.path.join(root, "RACE"), "dev")) == 4
  lines = json.dumps(ARTICLE) + "\n\n" + json.dumps(dict(ARTICLE, id="middle43.txt")) + "\n"
  root2 = _write_race(tmp_path / "b", {("train", "middle", "all.txt"): lines,
                                       ("train", "high", "all.txt"): json.dumps(high)})
  assert [e.qas_id for e in race.read_examples(root2, "train")] == [
      "middle42.txt-0", "middle42.txt-1", "middle43.txt-0", "middle43.txt-1",
      "high7.txt-0", "high7.txt-1"]
  with pytest.raises(ValueError, match="exclude each other"):
    race.levels_from_flags(True, True)


def test_reader_names_the_file_of_bad_input(tmp_path):
  def failing(content, match, name="1.txt"):
    root = _write_race(tmp_path / str(abs(hash(match))), {("dev", "middle", name): content,
                                                          ("dev", "high", "2.txt"): ARTICLE})
    with pytest.raises(ValueError, match=match):
      race.read_examples(root, "dev")

  three = dict(ARTICLE, options=[["a", "b", "c"], ARTICLE["options"][1]])
  failing(three, r"middle.1\.txt: question 0 has 3 options; RACE has 4")
  failing(dict(ARTICLE, answers=["B", "E"]), r"1\.txt: question 1 has answer 'E'")
  failing('{"article": "x", ', r"middle.1\.txt: not valid JSON")
  failing(json.dumps(ARTICLE) + "\n{broken\n", r"all\.txt:2: not valid JSON", name="all.txt")
  failing({k: v for k, v in ARTICLE.items() if k != "options"}, "missing or mistyped field "
          "'options'")
  failing(dict(ARTICLE, answers=["B"]), "2 questions, 2 option lists and 1 answers")
  with pytest.raises(FileNotFoundError, match="no RACE test split"):
    race.read_examples(_write_race(tmp_path / "c", {("dev", "middle", "1.txt"): ARTICLE}), "test")
  with pytest.raises(FileNotFoundError, match=r"high not found"):
    race.read_examples(str(tmp_path / "c"), "dev")


def test_blank_filling_and_truncation_follow_the_original(spm_model):
  assert race.qa_text("Tom rides his bike to _ .", "school") == "Tom rides his bike to school ."
  assert race.qa_text("What colour is it?", "Red") == "What colour is it? Red"
  tokenizer = FullTokenizer(spm_model_file=spm_model)
  article, qa = list(range(100, 160)), list(range(200, 220))
  packed = race.pack_choice(article, qa, 40, 8, tokenizer)
  ids = packed["input_ids"]
  # [CLS] article[:40-3-8] [SEP] qa[-8:] [SEP]: the qa part keeps its end.
  assert ids == ([tokenizer.cls_id] + article[:29] + [tokenizer.sep_id] + qa[-8:]
                 + [tokenizer.sep_id])
  assert packed["segment_ids"] == [0] * 31 + [1] * 9 and sum(packed["input_mask"]) == 40
  short = race.pack_choice([100, 101], [200], 10, 8, tokenizer)
  assert short["input_ids"][:6] == [tokenizer.cls_id, 100, 101, tokenizer.sep_id, 200,
                                    tokenizer.sep_id]
  assert short["input_mask"] == [1] * 6 + [0] * 4
  example = race.RaceExample("x-0", "middle", ARTICLE["article"], ARTICLE["questions"][1],
                             ARTICLE["options"][1], 2)
  (features,) = race.convert_examples([example], tokenizer, 32, 8)
  rows = np.reshape(features["input_ids"], [4, 32])
  for row, option in zip(rows, example.options):
    qa_ids = tokenizer.encode(race.qa_text(example.question, option))[-8:]
    sep = list(row).index(tokenizer.sep_id)
    assert list(row[sep + 1:sep + 1 + len(qa_ids)]) == qa_ids
  assert features["label_ids"] == 2


TINY = dict(vocab_size=1500, embedding_size=16, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)


def test_multiple_choice_head_uses_the_original_names(tmp_path):
  model = AlbertMultipleChoice(AlbertConfig.from_dict(TINY), seed=3)
  rng = np.random.default_rng(0)
  inputs = dict(input_word_ids=tf.constant(rng.integers(5, 1500, size=(2, 4, 8)), tf.int32),
                input_mask=tf.ones([2, 4, 8], tf.int32),
                input_type_ids=tf.constant([[[0] * 4 + [1] * 4] * 4] * 2, tf.int32))
  logits = model(inputs)
  assert logits.shape == (2, 4)
  # Each choice is scored on its own: the logit of choice c equals the encoder run on it alone.
  alone = model({k: v[:, 2:3] for k, v in inputs.items()})
  assert_close(alone[:, 0], logits[:, 2], 1e-5)
  prefix = save_original_checkpoint(model, str(tmp_path / "model.ckpt-1"))
  assert dict(tf.train.list_variables(prefix))["output_weights"] == [1, 32]
  fresh = AlbertMultipleChoice(AlbertConfig.from_dict(TINY), seed=9)
  assert not load_checkpoint(fresh, prefix).freshly_initialized
  assert_close(fresh(inputs), logits, 1e-6)
  assert AlbertMultipleChoice.from_config(model.get_config()).get_config() == model.get_config()


@pytest.mark.slow
@pytest.mark.learning
def test_run_race_learns_a_generated_set_and_writes_its_outputs(tmp_path, spm_model,
                                                                 learning_seed):
  """run_race.py from random weights learns a generated RACE set (dev and test accuracy at
  least 0.5 against chance 0.25) from any start.

  The sequence is short on purpose. The four packed choices of a question share the
  article and differ only in the option's few pieces, which a randomly initialized
  [CLS] barely attends to: at sequence 64 the choices' pooled outputs differ by about 1%,
  and at this learning rate some starts (seeds 0, 1 and 6 of 8 on an AMD EPYC) learned a
  little, spiked, and collapsed to scoring every choice alike (dev loss ln 4) for good.
  At 32 the option is a larger share of what [CLS] sees and none of 10 starts collapsed
  (docs/race.md says what a user who meets the collapse can do)."""
  data = sample_corpus.write_race_task(str(tmp_path / "data"), (("train", 600), ("dev", 60),
                                                                ("test", 40)),
                                       filler_sentences=1, seed=1)
  config = str(tmp_path / "albert_config.json")
  cfg = dict(TINY, hidden_size=64, intermediate_size=128)
  AlbertConfig.from_dict(cfg).to_json_file(config)
  keras.utils.set_random_seed(learning_seed)   # the start weights
  init = save_original_checkpoint(AlbertPretrainer(cfg), str(tmp_path / "init" / "model.ckpt-0"))
  out = tmp_path / "out"
  argv = [f"--data_dir={data}",
          f"--output_dir={out}", f"--albert_config_file={config}", f"--init_checkpoint={init}",
          f"--spm_model_file={spm_model}", "--do_train", "--do_eval", "--do_predict",
          "--max_seq_length=32", "--max_qa_length=16", "--train_batch_size=16",
          "--eval_batch_size=32", "--predict_batch_size=32", "--learning_rate=1e-3",
          "--train_step=500", "--warmup_step=50", "--save_checkpoints_steps=250",
          "--num_keep_checkpoint=1", "--log_steps=50", f"--seed={learning_seed}"]
  done = run_script("run_race.py", *argv)
  assert done.returncode == 0, done.stderr[-3000:]

  def results(name):
    with open(out / name) as f:
      return dict(line.rstrip("\n").split(" = ") for line in f)

  dev, test = results("eval_results.txt"), results("test_results.txt")
  print("RACE dev", dev, "test", test)
  assert dev["checkpoint"] == "model.ckpt-best"
  assert float(dev["accuracy"]) >= 0.5 and float(test["accuracy"]) >= 0.5   # chance: 0.25
  assert int(dev["middle_count"]) == int(dev["high_count"]) == 60
  assert 0 <= float(dev["middle_accuracy"]) <= 1 and 0 <= float(dev["high_accuracy"]) <= 1
  with open(out / "predictions.json") as f:
    predictions = json.load(f)
  examples = race.read_examples(data, "test")
  assert sorted(predictions) == sorted(e.qas_id for e in examples)
  assert set(predictions.values()) <= set("ABCD")
  correct = np.mean([predictions[e.qas_id] == "ABCD"[e.label] for e in examples])
  assert correct == pytest.approx(float(test["accuracy"]))
  for name in ("model.ckpt-best.index", "eval_log.csv", "train_log.csv", "learning_curve.png",
               "train", "eval"):
    assert os.path.exists(out / name), name

  # predict.py on the test questions (JSONL: article, question, options): --do_predict's
  # choices, and its probabilities (test_predictions.jsonl) within 1e-5.
  written = [json.loads(line) for line in open(out / "test_predictions.jsonl")]
  assert [w["id"] for w in written] == [e.qas_id for e in examples]
  assert ["ABCD"[w["choice"]] for w in written] == [predictions[e.qas_id] for e in examples]
  source = tmp_path / "questions.jsonl"
  source.write_text("".join(json.dumps(dict(id=e.qas_id, article=e.article, question=e.question,
                                            options=e.options)) + "\n" for e in examples))
  answers = tmp_path / "answers.jsonl"
  predict.run(predict.PredictOptions(model=str(out), input_file=str(source),
                                     output_file=str(answers), id_column="id", batch_size=7,
                                     progress=False, dtype="float32"))
  got = [json.loads(line) for line in open(answers)]
  assert [(g["index"], g["id"]) for g in got] == [(i, e.qas_id) for i, e in enumerate(examples)]
  assert [g["choice"] for g in got] == [w["choice"] for w in written]
  assert_close([g["probabilities"] for g in got], [w["probabilities"] for w in written], 1e-5)


def test_a_run_that_scores_every_choice_alike_says_so():
  """The collapse the learning test's docstring describes, named at the end of a run: a
  hint when every dev question's choices score within 0.01, none otherwise."""
  rng = np.random.default_rng(0)
  alike = rng.normal(size=(30, 1)) + rng.uniform(-0.004, 0.004, size=(30, 4))
  hint = multiple_choice.uniform_scores_hint(alike)
  assert hint.startswith("hint: every dev question's 4 choices score alike (dev loss ln 4)")
  assert "--learning_rate" in hint and "--warmup_step" in hint
  apart = alike.copy()
  apart[7, 2] += 0.05   # one question told apart
  assert multiple_choice.uniform_scores_hint(apart) is None
  assert multiple_choice.uniform_scores_hint(rng.normal(size=(30, 4))) is None


def test_run_race_rejects_bad_flags_before_any_work(tmp_path, spm_model):
  data = sample_corpus.write_race_task(str(tmp_path / "data"), (("train", 2), ("dev", 2)),
                                       seed=1)
  config = str(tmp_path / "albert_config.json")
  AlbertConfig.from_dict(TINY).to_json_file(config)

  def opts(**kwargs):
    base = dict(data_dir=data, output_dir=str(tmp_path / "out"), albert_config_file=config,
                spm_model_file=spm_model, max_seq_length=64, max_qa_length=16, do_train=True,
                progress=False)
    base.update(kwargs)
    return multiple_choice.RaceOptions(**base)

  with pytest.raises(FileNotFoundError, match="no RACE test split"):
    multiple_choice.run(opts(do_predict=True))
  with pytest.raises(ValueError, match="leaves no room for the article"):
    multiple_choice.run(opts(max_qa_length=61))
  with pytest.raises(ValueError, match="exclude each other"):
    multiple_choice.run(opts(high_only=True, middle_only=True))
  with pytest.raises(ValueError, match="exceeds the model's max_position_embeddings"):
    multiple_choice.run(opts(max_seq_length=128))
  assert not os.path.exists(tmp_path / "out")


def test_bucketing_by_length_changes_no_loss_and_no_prediction(tmp_path, spm_model):
  """--bucket_by_length cuts [B, 4, S] batches to their longest choice: the same losses
  and dev / test logits as fixed padding."""
  data = sample_corpus.write_race_task(str(tmp_path / "data"), (("train", 40), ("dev", 12),
                                                                ("test", 8)),
                                       filler_sentences=1, seed=1)
  config = str(tmp_path / "albert_config.json")
  AlbertConfig.from_dict(dict(TINY, max_position_embeddings=128)).to_json_file(config)

  def opts(out, **kwargs):
    base = dict(data_dir=data, output_dir=str(out), albert_config_file=config,
                spm_model_file=spm_model, max_seq_length=128, max_qa_length=16,
                train_batch_size=2, eval_batch_size=2, predict_batch_size=2, learning_rate=1e-3,
                train_step=8, warmup_step=1, save_checkpoints_steps=8, log_steps=1,
                progress=False, do_train=True)
    return multiple_choice.RaceOptions(**dict(base, **kwargs))

  losses = []
  for bucket in (True, False):
    multiple_choice.run(opts(tmp_path / str(bucket), bucket_by_length=bucket))
    with open(tmp_path / str(bucket) / "train_log.csv") as f:
      losses.append([float(row["loss"]) for row in csv.DictReader(f)])
  assert_close(losses[0], losses[1], 1e-5)

  run = multiple_choice.RaceRun(opts(tmp_path / "True", do_train=False, do_eval=True,
                                     do_predict=True))
  logits = split_logits_by_bucketing(run)
  for split, count in (("dev", 24), ("test", 16)):   # middle + high
    assert logits[True][split].shape == (count, 4)
    assert_close(logits[True][split], logits[False][split], 1e-5)
  widths = {int(b["input_word_ids"].shape[-1]) for b in race.dataset(
      run.records["dev"], 128, 2, is_training=False, bucket_by_length=True)}
  assert min(widths) < 128, widths


def test_a_wordpiece_vocabulary_packs_chinese_questions(tmp_path):
  """RACE-format data with a WordPiece vocabulary: the WordPiece [CLS]/[SEP]/[PAD] ids and
  Chinese text without spaces, one token per character."""
  from common import write_wordpiece_vocab  # pylint: disable=import-outside-toplevel
  article = "\u5c0f\u660e\u6bcf\u5929\u9a91\u81ea\u884c\u8f66\u53bb\u5b66\u6821\u3002"
  options = ["\u5b66\u6821", "\u516c\u56ed", "\u5546\u5e97", "\u533b\u9662"]
  question = "\u5c0f\u660e\u9a91\u81ea\u884c\u8f66\u53bb _ \u3002"
  vocab_file = write_wordpiece_vocab(tmp_path / "vocab_chinese.txt",
                                     [article, question] + options, max_words=0)
  tokenizer = FullTokenizer(vocab_file=vocab_file)
  example = race.RaceExample("zh-0", "middle", article, question, options, 0)
  (features,) = race.convert_examples([example], tokenizer, 40, 12)
  rows = np.reshape(features["input_ids"], [4, 40])
  for row, option in zip(rows, options):
    filled = race.qa_text(question, option)
    want = [tokenizer.cls_id] + tokenizer.encode(article) + [tokenizer.sep_id] + \
        tokenizer.encode(filled)[-12:] + [tokenizer.sep_id]
    assert list(row[:len(want)]) == want and set(row[len(want):]) <= {tokenizer.pad_id}
    assert len(tokenizer.encode(article)) == len(article)       # a token per character
  assert tokenizer.unk_id not in rows[0].tolist() and tokenizer.pad_id == 0
