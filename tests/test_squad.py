"""SQuAD: official-metric semantics on hand-made sets, character alignment and span
round trips, windows, reader errors, the heads against NumPy, original variable
names, and tiny models that learn generated v1.1 and v2.0 sets end to end."""

import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import (AlbertConfig, AlbertQuestionAnswerer, AlbertSpanHead, AlbertSpanV2Head,
                       load_checkpoint, save_original_checkpoint)
from albert_tf.commands import predict
from albert_tf.tasks import question_answering
from albert_tf.training import metrics
from albert_tf.data import sample_corpus, squad
from albert_tf.text.tokenization import FullTokenizer, preprocess_text
from common import assert_close, run_script


# ----------------------------------------------------------------------------- metrics


def _dataset(questions):
  """A SQuAD `data` list with one paragraph holding (id, [gold texts]) questions."""
  return [{"title": "t", "paragraphs": [{"context": "c", "qas": [
      {"id": qid, "question": "q?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
      for qid, golds in questions]}]}]


def test_squad_v1_metrics_equal_the_official_script_on_a_hand_made_set():
  data = _dataset([("q1", ["Denver Broncos", "The Denver Broncos"]),
                   ("q2", ["Santa Clara, California", "Levi's Stadium"]),
                   ("q3", ["1,000"]),
                   ("q4", ["nobody answered"])])
  predictions = {"q1": "the  Denver Broncos!",            # articles, case, punctuation: EM 1
                 "q2": "Levi's Stadium in Santa Clara",   # F1 max(1/2, 4/7) = 4/7 (2 of 5 tokens)
                 "q3": ""}                                # v1.1: empty prediction scores 0
  # q4 has no prediction: 0. Worked by hand: EM 1/4, F1 (1 + 4/7) / 4.
  result = metrics.squad_v1_evaluate(data, predictions)
  assert result["exact_match"] == pytest.approx(25.0, abs=1e-9)
  assert result["f1"] == pytest.approx(100 * (1 + 4 / 7) / 4, abs=1e-9)
  assert metrics.normalize_answer("  The  Eiffel-Tower, an icon!! ") == "eiffeltower icon"
  assert metrics.squad_f1("red car and bike", "the red car") == pytest.approx(2 / 3)


def test_squad_v2_metrics_equal_the_official_script_on_a_hand_made_set():
  data = _dataset([("a1", ["an apple", "apple"]), ("a2", ["the red car"]), ("n1", []),
                   ("n2", []), ("a3", ["The"])])   # a3's only answer normalizes to ""
  predictions = {"a1": "Apple.", "a2": "red car and bike", "n1": "", "n2": "something",
                 "a3": ""}
  na_probs = {"a1": 0.1, "a2": 0.4, "n1": 0.9, "n2": 0.3, "a3": 0.95}
  # By hand: exact a1 1, a2 0, n1 1, n2 0, a3 1 (gold "" == prediction ""); f1 a2 2/3.
  result = metrics.squad_v2_evaluate(data, predictions, na_probs)
  expected = {
      "exact": 60.0, "f1": 100 * (3 + 2 / 3) / 5, "total": 5,
      "HasAns_exact": 200 / 3, "HasAns_f1": 100 * (2 + 2 / 3) / 3, "HasAns_total": 3,
      "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
      # Sweeping na_prob upwards from "abstain everywhere" (2 of 5): a1 +1 (t=0.1),
      # n2 -1, a2 +0 (exact) / +2/3 (f1), n1 0, a3 +1: exact peaks at 3 (first at 0.1),
      # f1 at 3 + 2/3 (at 0.95).
      "best_exact": 60.0, "best_exact_thresh": 0.1,
      "best_f1": 100 * (3 + 2 / 3) / 5, "best_f1_thresh": 0.95}
  assert result.keys() == expected.keys()
  for key, value in expected.items():
    assert result[key] == pytest.approx(value, abs=1e-9), key
  # --na-prob-thresh 0.35: a2 (0.4), n1 (0.9), a3 (0.95) count as "no answer":
  # a2 -> 0, n1 -> 1, a3 (has answers) -> 0.
  thresholded = metrics.squad_v2_evaluate(data, predictions, na_probs, na_prob_thresh=0.35)
  assert thresholded["exact"] == pytest.approx(40.0) and thresholded["f1"] == pytest.approx(40.0)
  assert "best_f1" not in metrics.squad_v2_evaluate(data, predictions)


# ----------------------------------------------------------------------------- alignment

TRICKY = ["  Café  au   lait costs $3.50,  not \u00e92,50 ",
          "He said ``hello'' to   Zoë's naïve friend in 1,234,567 ways.",
          "The \uFB01nal count was 12,345, then 1990s, then 3,5,",
          "ΣΟΦΟΣ met İstanbul's straße guide at 10:30.",
          "x"]


def test_tokenize_with_offsets_keeps_the_pieces_and_points_at_their_characters(spm_model):
  tokenizer = FullTokenizer(spm_model_file=spm_model)
  for text in TRICKY:
    pieces, starts, ends = tokenizer.tokenize_with_offsets(text)
    assert pieces == tokenizer.tokenize(text)
    for piece, start, end in zip(pieces, starts, ends):
      assert 0 <= start <= end <= len(text)
      surface = text[start:end]
      assert surface == surface.strip()
      if "\uFB01" not in surface:   # a ligature is split across two pieces
        assert preprocess_text(surface, lower=True) == piece.replace("\u2581", ""), (text, piece)


def _examples_with_answers(texts_and_answers):
  examples = []
  for i, (context, answer) in enumerate(texts_and_answers):
    examples.append(squad.SquadExample(f"t{i}", "What is it?", context, answer,
                                       context.index(answer)))
  return examples


def _round_trip(examples, tokenizer, max_seq_length=64, doc_stride=16):
  """(answer, text of the gold span mapped to pieces and back) for every window with it."""
  pairs = []
  for features, meta in squad.convert_examples(examples, tokenizer, max_seq_length, doc_stride,
                                               16, is_training=True):
    if features["start_positions"]:
      first = features["start_positions"] - meta["doc_offset"]
      last = features["end_positions"] - meta["doc_offset"]
      example = examples[meta["example_index"]]
      pairs.append((example.answer_text,
                    squad.span_text(example.context, meta["starts"], meta["ends"], first, last)))
  return pairs


def test_every_gold_span_maps_to_pieces_and_back_to_the_answer_text(spm_model, tmp_path):
  tokenizer = FullTokenizer(spm_model_file=spm_model)
  tricky = _examples_with_answers([
      (TRICKY[0], "Café  au   lait"), (TRICKY[0], "$3.50"), (TRICKY[0], "\u00e92,50"),
      (TRICKY[1], "``hello''"), (TRICKY[1], "Zoë's naïve friend"), (TRICKY[1], "1,234,567"),
      (TRICKY[2], "12,345"), (TRICKY[2], "\uFB01nal"), (TRICKY[3], "ΣΟΦΟΣ"),
      (TRICKY[3], "İstanbul's straße"), (TRICKY[3], "10:30")])
  pairs = _round_trip(tricky, tokenizer)
  assert len(pairs) >= len(tricky)
  for answer, text in pairs:
    assert text == answer
  # Every training question of the generated sets, both versions (windows of 64).
  for version_2 in (False, True):
    path = sample_corpus.write_squad_task(str(tmp_path / f"t{version_2}.json"), 200,
                                          version_2, filler_sentences=3, seed=3)
    examples, _ = squad.read_squad_examples(path, True, version_2)
    pairs = _round_trip(examples, tokenizer)
    answerable = sum(not e.is_impossible for e in examples)
    assert len({a for a, _ in pairs}) > 0 and len(pairs) >= answerable
    assert all(text == answer for answer, text in pairs)


def max_context_window(windows, position):
  """The original's per-piece search (a reference): the window where piece `position`
  has the most context, the largest min(left, right) + 0.01 * length, the first on ties."""
  best, best_score = None, None
  for index, (start, length) in enumerate(windows):
    if not start <= position < start + length:
      continue
    score = min(position - start, start + length - 1 - position) + 0.01 * length
    if best_score is None or score > best_score:
      best, best_score = index, score
  return best


def test_windows_cover_long_contexts_and_each_piece_has_one_max_context_window(spm_model):
  assert squad.doc_windows(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
  assert squad.doc_windows(3, 4, 3) == [(0, 3)]
  assert max_context_window([(0, 4), (3, 4), (6, 4)], 3) == 0   # ties: the first
  assert max_context_window([(0, 4), (3, 4), (6, 4)], 5) == 1
  assert squad.max_context_windows([(0, 4), (3, 4), (6, 4)], 10)[3:6] == [0, 1, 1]
  for n, max_tokens, stride in ((10, 4, 3), (1000, 37, 11), (999, 50, 50), (64, 64, 1)):
    windows = squad.doc_windows(n, max_tokens, stride)
    assert squad.max_context_windows(windows, n) == \
        [max_context_window(windows, p) for p in range(n)]
  tokenizer = FullTokenizer(spm_model_file=spm_model)
  context = " ".join(["Every object has an identity, a type and a value."] * 12
                     + ["The answer is 1,234 here."])
  example = squad.SquadExample("long", "Where?", context, "1,234", context.index("1,234"))
  windows = list(squad.convert_examples([example], tokenizer, 48, 16, 8, is_training=True))
  pieces, _, _ = tokenizer.tokenize_with_offsets(context)
  assert len(windows) > 3 and len(pieces) > 48
  covered = {}
  for features, meta in windows:
    assert len(features["input_ids"]) == 48
    for i, is_max in enumerate(meta["max_context"]):
      covered.setdefault(meta["doc_start"] + i, []).append(is_max)
  # Every piece of the context is in some window, and max-context in exactly one.
  assert sorted(covered) == list(range(len(pieces)))
  assert all(sum(flags) == 1 for flags in covered.values())
  assert max(len(flags) for flags in covered.values()) >= 2
  with_answer = [f for f, _ in windows if not f["is_impossible"]]
  assert with_answer and all(f["start_positions"] > 0 for f in with_answer)
  assert all(f["start_positions"] == 0 and f["end_positions"] == 0
             for f, _ in windows if f["is_impossible"])


# ----------------------------------------------------------------------------- reading

def _write(path, content):
  with open(path, "w", encoding="utf-8") as f:
    f.write(content if isinstance(content, str) else json.dumps(content))
  return str(path)


def test_reader_names_the_place_of_bad_input(tmp_path, caplog):
  bad = _write(tmp_path / "bad.json", '{"data": [\n {"paragraphs": [}\n]}')
  with pytest.raises(ValueError, match=r"bad.json:2:\d+: not valid JSON"):
    squad.read_squad_examples(bad, True, False)
  with pytest.raises(FileNotFoundError, match="missing.json"):
    squad.read_squad_examples(str(tmp_path / "missing.json"), True, False)

  def qa(**fields):
    base = {"id": "q1", "question": "What?", "answers": [{"text": "cat", "answer_start": 4}]}
    base.update(fields)
    return {"data": [{"title": "t", "paragraphs": [{"context": "The cat sat.", "qas": [
        {k: v for k, v in base.items() if v is not None}]}]}]}

  with pytest.raises(ValueError, match=r"paragraphs\[0\]\.qas\[0\] \(id q1\): missing field "
                                       r"'question'"):
    squad.read_squad_examples(_write(tmp_path / "a.json", qa(question=None)), True, False)
  with pytest.raises(ValueError, match="missing field 'answer_start'"):
    squad.read_squad_examples(_write(tmp_path / "b.json", qa(answers=[{"text": "cat"}])),
                              True, False)
  for is_training in (True, False):   # a v2.0 dev file to predict in v1.1 mode too
    with pytest.raises(ValueError, match="pass --version_2_with_negative"):
      squad.read_squad_examples(_write(tmp_path / "c.json", qa(is_impossible=True, answers=[])),
                                is_training, False)
  two = qa()
  two["data"][0]["paragraphs"][0]["qas"].append(dict(two["data"][0]["paragraphs"][0]["qas"][0]))
  with pytest.raises(ValueError, match="duplicate question id"):
    squad.read_squad_examples(_write(tmp_path / "d.json", two), True, False)

  # A wrong answer_start and an empty question: skipped in training (counted, warned
  # with the id); an empty question is still answered at prediction time.
  mixed = qa(answers=[{"text": "cat", "answer_start": 5}])
  qas = mixed["data"][0]["paragraphs"][0]["qas"]
  qas.append({"id": "q2", "question": "  ", "answers": [{"text": "sat", "answer_start": 8}]})
  qas.append({"id": "q3", "question": "Who?", "answers": [{"text": "cat", "answer_start": 4}]})
  path = _write(tmp_path / "e.json", mixed)
  examples, stats = squad.read_squad_examples(path, True, False)
  assert [e.qas_id for e in examples] == ["q3"]
  assert stats.mismatched_answers == ["q1"] and stats.empty_questions == ["q2"]
  assert "q1" in caplog.text and "does not point at the answer" in caplog.text
  examples, _ = squad.read_squad_examples(path, False, False)
  assert [e.qas_id for e in examples] == ["q1", "q2", "q3"]


# ----------------------------------------------------------------------------- heads

def _log_softmax(x):
  return x - np.logaddexp.reduce(x, axis=-1, keepdims=True)


def _layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _numpy_v2(head, x, p_mask, start):
  """The original create_v2_model in NumPy (float64): concatenations as written there."""
  w = {}
  for name in ("start_dense", "end_dense_0", "end_dense_1", "answer_dense_0", "answer_dense_1"):
    layer = getattr(head, name)
    w[name + "/kernel"] = layer.kernel.numpy().astype(np.float64)
    if layer.use_bias:
      w[name + "/bias"] = layer.bias.numpy().astype(np.float64)
  w["end_LayerNorm/gamma"] = head.end_layer_norm.gamma.numpy().astype(np.float64)
  w["end_LayerNorm/beta"] = head.end_layer_norm.beta.numpy().astype(np.float64)
  x = x.astype(np.float64)
  masked = lambda logits, m: logits * (1 - m) - 1e30 * m          # noqa: E731
  start_logits = masked(x @ w["start_dense/kernel"][:, 0] + w["start_dense/bias"][0], p_mask)
  start_lp = _log_softmax(start_logits)
  start_h = x[np.arange(len(x)), start]                                     # [B, H]
  concat = np.concatenate([x, np.repeat(start_h[:, None], x.shape[1], 1)], -1)
  hidden = np.tanh(concat @ w["end_dense_0/kernel"] + w["end_dense_0/bias"])
  hidden = _layer_norm(hidden, w["end_LayerNorm/gamma"], w["end_LayerNorm/beta"])
  end_lp = _log_softmax(masked(hidden @ w["end_dense_1/kernel"][:, 0] + w["end_dense_1/bias"][0],
                               p_mask))
  p = np.exp(_log_softmax(start_logits))
  answer = np.concatenate([np.einsum("bsh,bs->bh", x, p), x[:, 0]], -1)
  answer = np.tanh(answer @ w["answer_dense_0/kernel"] + w["answer_dense_0/bias"])
  return start_lp, end_lp, answer @ w["answer_dense_1/kernel"][:, 0]


def test_questions_with_empty_answers_are_gold_only_in_v2():
  """A v1.1 predict file of new questions written with `"answers": []` is predicted and
  not evaluated (the official v1.1 evaluation has nothing to score them against, and
  crashed on them); in v2.0 an empty list is the gold "no answer"."""
  def dataset(*answer_lists):
    return [{"title": "t", "paragraphs": [{"context": "The cat sat.", "qas": [
        dict(id=f"q{i}", question="What?", **({} if a is None else {"answers": a}))
        for i, a in enumerate(answer_lists)]}]}]

  cat = [{"text": "cat", "answer_start": 4}]
  assert squad.has_gold_answers(dataset(cat, cat))
  assert squad.has_gold_answers(dataset(cat, []), version_2_with_negative=True)
  assert not squad.has_gold_answers(dataset(cat, []))
  assert not squad.has_gold_answers(dataset([], []))
  assert not squad.has_gold_answers(dataset(cat, None), version_2_with_negative=True)


def test_span_heads_match_numpy_references_of_the_original_equations():
  rng = np.random.default_rng(0)
  b, s, h, k, e = 3, 12, 16, 4, 3
  x = rng.normal(size=(b, s, h)).astype(np.float32)
  p_mask = np.zeros((b, s), np.float32)
  p_mask[:, 1:4] = 1      # the question and [SEP]
  p_mask[:, -2:] = 1      # padding
  head = AlbertSpanV2Head(h, start_n_top=k, end_n_top=e, dropout_rate=0.1, seed=1)
  head.build([None, None, h])
  for layer in (head.end_layer_norm,):   # non-trivial LayerNorm parameters
    layer.gamma.assign(rng.normal(1, 0.3, size=h)), layer.beta.assign(rng.normal(0, 0.3, size=h))
  start = np.array([0, 5, 9])
  trained = head(tf.constant(x), tf.constant(p_mask), tf.constant(start), training=False)
  start_lp, end_lp, cls = _numpy_v2(head, x, p_mask, start)
  assert_close(trained["start_log_probs"], start_lp, 1e-5)
  assert_close(trained["end_log_probs"], end_lp, 1e-5)
  assert_close(trained["cls_logits"], cls, 1e-5)

  # Inference: the top starts, and for each the top ends of its own conditioned distribution.
  top = head(tf.constant(x), tf.constant(p_mask), training=False)
  start_index = top["start_top_index"].numpy()
  np.testing.assert_array_equal(start_index, np.argsort(-start_lp, -1, kind="stable")[:, :k])
  assert_close(top["start_top_log_probs"], np.take_along_axis(start_lp, start_index, -1), 1e-5)
  for i in range(k):
    _, end_i, _ = _numpy_v2(head, x, p_mask, start_index[:, i])
    best = np.sort(end_i, -1)[:, ::-1][:, :e]
    assert_close(top["end_top_log_probs"].numpy()[:, i * e:(i + 1) * e], best, 1e-5)
  assert np.all(p_mask[np.arange(b)[:, None], top["end_top_index"].numpy()] == 0)
  assert_close(top["cls_logits"], cls, 1e-5)

  v1 = AlbertSpanHead(seed=2)
  v1.build([None, None, h])
  out = v1(tf.constant(x))
  logits = x.astype(np.float64) @ v1.output_weights.numpy().T.astype(np.float64) \
      + v1.output_bias.numpy()
  assert_close(out["start_logits"], logits[..., 0], 1e-5)
  assert_close(out["end_logits"], logits[..., 1], 1e-5)
  for layer in (head, v1):
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


TINY = dict(vocab_size=1500, embedding_size=16, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)


@pytest.mark.parametrize("version_2", [False, True])
def test_question_answerer_round_trips_through_the_original_variable_names(tmp_path, version_2):
  model = AlbertQuestionAnswerer(AlbertConfig.from_dict(TINY), version_2, 3, 2, seed=5)
  inputs = dict(input_word_ids=tf.constant([[2, 10, 3, 40, 41, 3, 0, 0]]),
                input_mask=tf.constant([[1, 1, 1, 1, 1, 1, 0, 0]]),
                input_type_ids=tf.constant([[0, 0, 0, 1, 1, 1, 0, 0]]),
                p_mask=tf.constant([[0, 1, 1, 0, 0, 1, 1, 1]]))
  expected = model(inputs)
  prefix = save_original_checkpoint(model, str(tmp_path / "model.ckpt-1"))
  names = dict(tf.train.list_variables(prefix))
  if version_2:
    assert names["end_logits/dense_0/kernel"] == [64, 32]
    assert names["answer_class/dense_1/kernel"] == [32, 1]
    assert "answer_class/dense_1/bias" not in names
    assert names["end_logits/LayerNorm/gamma"] == [32]
  else:
    assert names["cls/squad/output_weights"] == [2, 32]
  fresh = AlbertQuestionAnswerer(AlbertConfig.from_dict(TINY), version_2, 3, 2, seed=99)
  report = load_checkpoint(fresh, prefix)
  assert not report.freshly_initialized
  for key, value in fresh(inputs).items():
    assert_close(value, expected[key], 1e-6)
  clone = AlbertQuestionAnswerer.from_config(model.get_config())
  assert clone.get_config() == model.get_config()


# ----------------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def squad_files(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("squad")
  AlbertConfig.from_dict(dict(TINY, hidden_size=64, intermediate_size=128)).to_json_file(
      str(root / "albert_config.json"))
  files = dict(config=str(root / "albert_config.json"), spm=spm_model, root=root)
  for version_2 in (False, True):
    tag = "v2" if version_2 else "v1"
    files[tag + "_train"] = sample_corpus.write_squad_task(
        str(root / f"train-{tag}.json"), 1000, version_2, filler_sentences=1, seed=1)
    files[tag + "_dev"] = sample_corpus.write_squad_task(
        str(root / f"dev-{tag}.json"), 150, version_2, filler_sentences=1, seed=2)
  return files


def squad_options(files, output_dir, version_2, **kwargs):
  tag = "v2" if version_2 else "v1"
  base = dict(output_dir=str(output_dir), albert_config_file=files["config"],
              spm_model_file=files["spm"], train_file=files[tag + "_train"],
              predict_file=files[tag + "_dev"], version_2_with_negative=version_2,
              max_seq_length=64, doc_stride=32, max_query_length=16, do_train=True,
              do_predict=True, train_batch_size=32, predict_batch_size=64,
              learning_rate=3e-3, num_train_epochs=20, save_checkpoints_steps=300,
              keep_checkpoint_max=1, log_steps=50, progress=False)
  base.update(kwargs)
  return question_answering.SquadOptions(**base)


def _check_output_files(output_dir, dev_file, version_2, n_best_size):
  with open(dev_file) as f:
    dataset = json.load(f)["data"]
  ids = [qa["id"] for article in dataset for p in article["paragraphs"] for qa in p["qas"]]
  with open(os.path.join(output_dir, "predictions.json")) as f:
    predictions = json.load(f)
  with open(os.path.join(output_dir, "nbest_predictions.json")) as f:
    nbest = json.load(f)
  assert sorted(predictions) == sorted(ids) == sorted(nbest)
  assert all(isinstance(v, str) for v in predictions.values())
  score_keys = ("start_log_prob", "end_log_prob") if version_2 else ("start_logit", "end_logit")
  for qid, entries in nbest.items():
    assert 1 <= len(entries) <= n_best_size
    assert all(set(e) == {"text", "probability", *score_keys} for e in entries)
    assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    assert len({e["text"] for e in entries}) == len(entries)
  null_odds = None
  if version_2:
    with open(os.path.join(output_dir, "null_odds.json")) as f:
      null_odds = json.load(f)
    assert sorted(null_odds) == sorted(ids)
    assert all(isinstance(v, float) for v in null_odds.values())
  else:
    assert not os.path.exists(os.path.join(output_dir, "null_odds.json"))
  with open(os.path.join(output_dir, "eval_results.txt")) as f:
    written = dict(line.rstrip("\n").split(" = ") for line in f)
  return dataset, predictions, nbest, null_odds, written


def check_predict_py(out, dataset, predictions, nbest, tmp_path, count=60):
  """predict.py on the run's first `count` dev questions (JSONL: question, context):
  --do_predict's answers, and its scores (the best n-best probability) within 1e-5; each
  answer is the context's characters [start, end). (ONNX Runtime and Beam give the same
  logits, whose answers the same rules make: tests/test_doors.py.) Returns (the
  questions, the answers)."""
  questions = [dict(id=qa["id"], question=qa["question"], context=p["context"])
               for article in dataset for p in article["paragraphs"] for qa in p["qas"]][:count]
  source = tmp_path / "questions.jsonl"
  source.write_text("".join(json.dumps(q) + "\n" for q in questions))
  predict.run(predict.PredictOptions(model=str(out), input_file=str(source),
                                     output_file=str(tmp_path / "answers.jsonl"),
                                     id_column="id", batch_size=16, progress=False,
                                     dtype="float32"))
  got = [json.loads(line) for line in open(tmp_path / "answers.jsonl")]
  assert [g["id"] for g in got] == [q["id"] for q in questions]
  assert [g["answer"] for g in got] == [predictions[q["id"]] for q in questions]
  assert_close([g["score"] for g in got], [nbest[q["id"]][0]["probability"] for q in questions],
               1e-5)
  for g, q in zip(got, questions):
    if g["answer"]:
      assert q["context"][g["start"]:g["end"]] == g["answer"]
    else:
      assert g["start"] is None and g["end"] is None
  return questions, got


@pytest.mark.slow
@pytest.mark.learning
def test_squad_v1_tiny_model_learns_and_writes_the_official_formats(squad_files, tmp_path,
                                                                    learning_seed):
  untrained = question_answering.run(squad_options(squad_files, tmp_path / "untrained", False,
                                                   do_train=False, seed=learning_seed))["eval"]
  result = question_answering.run(squad_options(squad_files, tmp_path / "v1", False,
                                                seed=learning_seed))
  evaluation = result["eval"]
  print("SQuAD v1.1 untrained", untrained, "trained", evaluation)
  assert evaluation["exact_match"] >= 40 and evaluation["f1"] >= 45
  assert evaluation["exact_match"] >= untrained["exact_match"] + 35
  dataset, predictions, nbest, _, written = _check_output_files(
      tmp_path / "v1", squad_files["v1_dev"], False, 20)
  assert metrics.squad_v1_evaluate(dataset, predictions) == pytest.approx(evaluation)
  assert float(written["exact_match"]) == pytest.approx(evaluation["exact_match"])
  assert written["checkpoint"] == "model.ckpt-best"
  for name in ("learning_curve.png", "eval_log.csv", "train_log.csv", "train", "eval"):
    assert os.path.exists(tmp_path / "v1" / name), name
  # predict.py: --do_predict's answers (v1.1's: no has_answer, no null score).
  _, got = check_predict_py(tmp_path / "v1", dataset, predictions, nbest, tmp_path,
                          count=40)
  assert not {"has_answer", "null_score"} & set(got[0])

  # The cached prediction features are reused; a given file built otherwise is refused
  # and left as it was.
  cached = [f for f in os.listdir(tmp_path / "v1") if f.startswith("predict_")
            and f.endswith(".tf_record")]
  assert len(cached) == 1
  record = str(tmp_path / "v1" / cached[0])
  before = os.path.getmtime(record)
  question_answering.run(squad_options(squad_files, tmp_path / "again", False, do_train=False,
                                       predict_feature_file=record,
                                       predict_feature_left_file=record + ".meta.jsonl"))
  assert os.path.getmtime(record) == before
  with pytest.raises(ValueError, match=f"{cached[0]} exists but was not built"):
    question_answering.run(squad_options(squad_files, tmp_path / "other", False, do_train=False,
                                         doc_stride=16, predict_feature_file=record,
                                         predict_feature_left_file=record + ".meta.jsonl"))
  assert os.path.getmtime(record) == before and not os.path.exists(tmp_path / "other")


@pytest.mark.slow
@pytest.mark.learning
def test_run_squad_v2_learns_answers_and_abstentions(squad_files, tmp_path, learning_seed):
  out = tmp_path / "v2"
  flags = squad_options(squad_files, out, True, seed=learning_seed)
  argv = []
  for key, value in vars(flags).items():
    if key == "progress":   # not a flag: the scripts always show progress
      continue
    if isinstance(value, bool):
      argv.append(f"--{key}" if value else f"--no{key}")
    elif value is not None:
      argv.append(f"--{key}={value}")
  done = run_script("run_squad.py", *argv)
  assert done.returncode == 0, done.stderr[-3000:]
  dataset, predictions, nbest, null_odds, written = _check_output_files(
      out, squad_files["v2_dev"], True, 20)
  evaluation = {k: float(v) for k, v in written.items() if k != "checkpoint"}
  print("SQuAD v2.0", evaluation)
  assert evaluation["HasAns_exact"] >= 40 and evaluation["NoAns_exact"] >= 40
  assert evaluation["exact"] >= 45 and evaluation["f1"] >= 50
  # eval_results.txt is evaluate-v2.0.py with --na-prob-thresh = the applied threshold.
  recomputed = metrics.squad_v2_evaluate(dataset, predictions, null_odds, 0.0)
  assert recomputed == pytest.approx(evaluation)
  assert all((predictions[q] == "") == (null_odds[q] > 0.0) for q in predictions)
  questions, got = check_predict_py(out, dataset, predictions, nbest, tmp_path)
  assert [g["has_answer"] for g in got] == [predictions[q["id"]] != "" for q in questions]
  assert_close([g["null_score"] for g in got], [null_odds[q["id"]] for q in questions], 1e-5)
  with pytest.raises(ValueError, match=r"no_context.jsonl:1: no context"):
    empty = tmp_path / "no_context.jsonl"
    empty.write_text(json.dumps(dict(question="who?", context=" ")) + "\n")
    predict.run(predict.PredictOptions(model=str(out), input_file=str(empty),
                                       output_file=str(tmp_path / "never.jsonl"), dtype="float32"))
  assert not (tmp_path / "never.jsonl").exists()
  # A threshold chosen elsewhere is applied as given, without touching the dev figures' choice.
  high = question_answering.run(squad_options(squad_files, out, True, do_train=False,
                                              null_score_diff_threshold=1e9))
  assert high["eval"]["NoAns_exact"] <= evaluation["NoAns_exact"]
  with open(out / "predictions.json") as f:
    assert all(answer for answer in json.load(f).values())


def test_run_squad_rejects_bad_flags_before_any_work(squad_files, tmp_path):
  with pytest.raises(ValueError, match="--do_train needs --train_file"):
    question_answering.run(squad_options(squad_files, tmp_path / "a", False, train_file=None))
  with pytest.raises(ValueError, match="leaves no room for the context"):
    question_answering.run(squad_options(squad_files, tmp_path / "b", False, max_query_length=62))
  with pytest.raises(ValueError, match="exceeds the model's max_position_embeddings"):
    question_answering.run(squad_options(squad_files, tmp_path / "c", False, max_seq_length=128))
  with pytest.raises(FileNotFoundError, match="nowhere.json"):
    question_answering.run(squad_options(squad_files, tmp_path / "d", False,
                                         predict_file=str(tmp_path / "nowhere.json")))
  assert not any(os.path.exists(tmp_path / d) for d in "abcd")


@pytest.mark.slow
@pytest.mark.parametrize("version_2", [False, True])
def test_bucketing_by_length_changes_no_loss_and_no_prediction(squad_files, tmp_path,
                                                                version_2):
  """--bucket_by_length (the default) against fixed padding: the same losses, the same
  answers, n-best probabilities and null odds (the encoder has no dropout here; the v2
  answer-class dropout draws [B, H] masks, the same either way)."""
  config = str(tmp_path / "albert_config.json")  # 128 positions: windows of ~40 use 64
  AlbertConfig.from_dict(dict(TINY, hidden_size=64, intermediate_size=128,
                              max_position_embeddings=128)).to_json_file(config)
  written = {}
  for bucket in (True, False):
    out = tmp_path / str(bucket)
    result = question_answering.run(squad_options(
        squad_files, out, version_2, bucket_by_length=bucket, num_train_epochs=0.25,
        train_batch_size=8, predict_batch_size=2, log_steps=1, albert_config_file=config,
        max_seq_length=128, doc_stride=64))
    with open(out / "train_log.csv") as f:
      losses = [float(row["loss"]) for row in csv.DictReader(f)]
    files = {name: json.load(open(out / f"{name}.json"))
             for name in ("predictions", "nbest_predictions")
             + (("null_odds",) if version_2 else ())}
    written[bucket] = (result["eval"], losses, files)
  (eval_cut, losses_cut, cut), (eval_fixed, losses_fixed, fixed) = written[True], written[False]
  assert len(losses_cut) > 20
  assert_close(losses_cut, losses_fixed, 1e-5)
  assert eval_cut == pytest.approx(eval_fixed, abs=1e-5)
  assert cut["predictions"] == fixed["predictions"]
  for qid, entries in fixed["nbest_predictions"].items():
    assert [e["text"] for e in cut["nbest_predictions"][qid]] == [e["text"] for e in entries]
    assert_close([e["probability"] for e in cut["nbest_predictions"][qid]],
                 [e["probability"] for e in entries], 1e-5)
  if version_2:
    assert_close([cut["null_odds"][q] for q in fixed["null_odds"]],
                 list(fixed["null_odds"].values()), 1e-5)
  # The prediction batches (2 windows) were cut to fewer than the 128 positions.
  data = squad.dataset(str(next((tmp_path / "True").glob("predict_*.tf_record"))), 128, 2,
                       is_training=False, bucket_by_length=True)
  widths = {int(b["input_word_ids"].shape[1]) for b in data}
  assert min(widths) < 128, widths


def test_chinese_contexts_with_a_wordpiece_vocabulary_map_answers_to_their_characters(tmp_path):
  """CMRC 2018 and DRCD use SQuAD v1.1's JSON with contexts written without spaces: each CJK
  character is a token, so answers inside a run of them, or beside Latin text, come back
  as exactly their characters."""
  from common import write_wordpiece_vocab  # pylint: disable=import-outside-toplevel
  context = ("2008\u5e74\u5317\u4eac\u5965\u8fd0\u4f1a\u4e8e8\u67088\u65e5\u5728\u5317\u4eac"
             "\u5f00\u5e55\uff0cMichael Phelps\u83b7\u5f97\u4e868\u679a\u91d1\u724c\u3002"
             "\u4ed6\u5728\u6c34\u7acb\u65b9\uff08Water Cube\uff09\u6bd4\u8d5b\u3002")
  answers = ["\u5317\u4eac\u5965\u8fd0\u4f1a",       # inside a run of CJK characters
             "\u5965\u8fd0",                           # in the middle of that run
             "Michael Phelps",                         # Latin between CJK characters
             "8\u679a\u91d1\u724c",                    # a digit, then CJK
             "Phelps\u83b7\u5f97",                     # across the Latin/CJK boundary
             "Water Cube"]                             # inside full-width brackets
  # Characters only (no whole words): Latin words become several "##" pieces or [UNK].
  vocab_file = write_wordpiece_vocab(tmp_path / "vocab_chinese.txt", [context], max_words=0)
  tokenizer = FullTokenizer(vocab_file=str(vocab_file))
  pieces = tokenizer.tokenize(context)
  assert sum(p.startswith("##") for p in pieces) >= 5 and "[UNK]" in pieces
  examples = _examples_with_answers([(context, a) for a in answers])
  pairs = _round_trip(examples, tokenizer, max_seq_length=48, doc_stride=8)
  assert sorted({a for a, _ in pairs}) == sorted(answers)
  for answer, text in pairs:
    assert text == answer
