"""hub_export/export_onnx.py: encoders and fine-tuned runs as ONNX files, run by onnxruntime
and compared with TensorFlow at shapes the conversion never saw."""

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import sentencepiece as spm

from albert_tf import AlbertClassifier, AlbertTokenClassifier
from albert_tf.commands import export_onnx
from common import (GROUPED, assert_close, encoder_inputs, random_inputs, run_script,
                    write_classifier_run, write_release)

CFG = dict(GROUPED, vocab_size=1500)   # 3 layers over 2 groups of 2 sub-blocks


def _session(path):
  return ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def _export(tmp_path, name, **flags):
  out = str(tmp_path / "onnx" / name)
  export_onnx.run(export_onnx.OnnxOptions(output_file=out, **flags))
  return out


def test_an_encoder_equals_tensorflow_at_untraced_shapes_with_each_weight_once(tmp_path,
                                                                               spm_model):
  pretrainer = write_release(str(tmp_path / "release"), CFG, spm_model)
  out = _export(tmp_path, "encoder.onnx", albert_directory=str(tmp_path / "release"))
  session = _session(out)
  assert [i.name for i in session.get_inputs()] == ["input_word_ids", "input_mask",
                                                    "input_type_ids"]
  assert sorted(o.name for o in session.get_outputs()) == ["pooled_output", "sequence_output"]
  for batch, seq in ((1, 7), (3, 19)):
    inputs = encoder_inputs(random_inputs(CFG, batch=batch, seq=seq))
    want = pretrainer.encoder(inputs, training=False)
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))
    for key in ("pooled_output", "sequence_output"):
      assert_close(got[key], want[key], 1e-5)
  weights = sum(v.numpy().size for v in pretrainer.encoder.weights)
  stored = sum(np.prod(t.dims) for t in onnx.load(out).graph.initializer
               if t.data_type == onnx.TensorProto.FLOAT)
  # the 2 groups' 4 blocks once (a copy per application would double it; tf2onnx folds a few
  # small constants into nodes)
  assert 0.9 * weights < stored < 1.05 * weights
  sidecar = json.loads(open(out + ".json").read())
  assert sidecar["vocabulary"] == "spiece.model" and sidecar["do_lower_case"] is True
  assert open(tmp_path / "onnx" / "spiece.model", "rb").read() == open(spm_model, "rb").read()


@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("run")
  model = AlbertClassifier(CFG, 3)
  rng = np.random.default_rng(0)
  model.classifier.output_weights.assign(rng.normal(0, 2, model.classifier.output_weights.shape))
  write_classifier_run(root, model, CFG, 32, task="MNLI", spm_model_file=spm_model)
  return root, model


def test_a_run_s_logits_and_a_client_that_tokenizes_with_the_shipped_vocabulary(
    classifier_run, tmp_path):
  run, model = classifier_run
  out = _export(tmp_path, "mnli.onnx", model_dir=str(run))
  sidecar = json.loads(open(out + ".json").read())
  assert sidecar["labels"] == ["contradiction", "entailment", "neutral"]
  assert sidecar["outputs"] == ["logits"]
  assert sidecar["problem_type"] == "single_label_classification"
  # ... and in the file's own metadata, for a client that has the file alone.
  written = _session(out).get_modelmeta().custom_metadata_map
  assert json.loads(written["labels"]) == sidecar["labels"]
  assert json.loads(written["problem_type"]) == "single_label_classification"
  # A client outside albert_tf: SentencePiece and the JSON alone (lower-cased text).
  pieces = spm.SentencePieceProcessor(model_file=os.path.join(os.path.dirname(out),
                                                              sidecar["vocabulary"]))
  a, b = (pieces.encode(t.lower()) for t in ("The cat sat.", "A cat was sitting."))
  ids = [sidecar["cls_id"]] + a + [sidecar["sep_id"]] + b + [sidecar["sep_id"]]
  feeds = dict(input_word_ids=np.array([ids], np.int32),
               input_mask=np.ones((1, len(ids)), np.int32),
               input_type_ids=np.array([[0] * (len(a) + 2) + [1] * (len(b) + 1)], np.int32))
  logits = _session(out).run(None, feeds)[0]
  assert_close(logits, model(feeds, training=False), 1e-5)


def test_dynamic_int8_is_smaller_and_close(tmp_path, spm_model):
  cfg = dict(CFG, embedding_size=64, hidden_size=128, intermediate_size=512)  # int8 pays off
  model = AlbertClassifier(cfg, 3)
  run = tmp_path / "run"
  run.mkdir()
  write_classifier_run(run, model, cfg, 32, task="MNLI", spm_model_file=spm_model)
  fp32 = _export(tmp_path, "fp32.onnx", model_dir=str(run))
  int8 = _export(tmp_path, "int8.onnx", model_dir=str(run), quantization="dynamic_int8")
  ops = {n.op_type for n in onnx.load(int8).graph.node}
  assert "DynamicQuantizeLinear" in ops or "MatMulInteger" in ops, ops
  assert os.path.getsize(int8) < 0.4 * os.path.getsize(fp32)
  inputs = encoder_inputs(random_inputs(cfg, batch=16, seq=24))
  a, b = _session(fp32).run(None, inputs)[0], _session(int8).run(None, inputs)[0]
  assert np.abs(a - b).max() < 0.1 * np.abs(a).max()


# (RACE's and SQuAD's ONNX files answer through predict.py --runtime=onnxruntime as
# --do_predict does, within 1e-5: tests/test_doors.py. A tagger's file, which predict.py
# does not run, is compared here.)
def test_a_tagger_run_s_logits_and_labels(tmp_path, spm_model):
  cfg = CFG
  tags = ["O", "B-PER", "I-PER"]
  model = AlbertTokenClassifier(cfg, len(tags))
  inputs = encoder_inputs(random_inputs(cfg, batch=2, seq=12))
  model(inputs)
  run = tmp_path / "run"
  run.mkdir()
  write_classifier_run(run, model, cfg, 32, task="NER", spm_model_file=spm_model, labels=tags)
  out = _export(tmp_path, "task.onnx", model_dir=str(run))
  session = _session(out)
  got = dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))
  assert sorted(got) == ["logits"]
  assert got["logits"].shape == (2, 12, len(tags))                  # [B, S, tags]
  assert_close(got["logits"], model(inputs, training=False).numpy(), 1e-5)
  assert json.loads(open(out + ".json").read())["labels"] == tags


def test_errors_name_the_flag_and_leave_files_alone(classifier_run, tmp_path):
  run, _ = classifier_run
  target = tmp_path / "out" / "model.onnx"
  target.parent.mkdir()
  target.write_bytes(b"mine")
  (target.parent / "spiece.model").write_bytes(b"another vocabulary")
  done = run_script("hub_export/export_onnx.py", f"--model={run}", f"--output_file={target}")
  assert done.returncode == 1 and "Traceback" not in done.stderr
  assert "--output_file" in done.stderr and "--overwrite" in done.stderr
  with pytest.raises(FileExistsError, match="is another vocabulary"):
    export_onnx.run(export_onnx.OnnxOptions(model=str(run), output_file=str(target),
                                            overwrite=True))
  assert target.read_bytes() == b"mine"
  assert (target.parent / "spiece.model").read_bytes() == b"another vocabulary"
  assert sorted(os.listdir(target.parent)) == ["model.onnx", "spiece.model"]
  with pytest.raises(ValueError, match="pass --model: The model to read"):
    export_onnx.run(export_onnx.OnnxOptions(output_file=str(tmp_path / "x.onnx")))
