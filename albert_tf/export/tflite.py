"""TFLite (LiteRT) export of a fine-tuned classifier or tagger (or a bare encoder): raw text in.

The model file holds the whole pipeline for one example: ALBERT's
tokenization (tensorflow-text's TFLite ops, see `albert_tf.text.lite`),
packing at `max_seq_length`, the encoder and the classification head. Its
`serving_default` signature takes the task's text fields as string [1]
tensors named as the run names its text inputs (`albert_tf.runs.Run.text_inputs`: your
own files' columns, or the GLUE task's: `sentence` for SST-2) and returns
`probabilities` [1, C], or `score` [1] for STS-B.
`LiteTagger` (a run_ner.py run) returns a tag id per position; `LiteEncoder` the
encoder's outputs, for a head of one's own.
Running either needs the TF Text custom ops registered with the interpreter
(`load_interpreter` does it).
"""

import time
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.problems import Problem
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.modeling.tracing import inference_only
from albert_tf.modeling.models import ENCODER_INPUTS as INPUT_KEYS, AlbertClassifier
from albert_tf.text import lite, packing
from albert_tf.text.tokenization import FullTokenizer

QUANTIZATIONS = ("none", "float16", "dynamic_int8", "int8")


class _LiteModule(tf.Module):
  """The signature's inputs for the subclasses' `serve`: raw text for a SentencePiece
  vocabulary (tokenized and packed inside), packed ids for a WordPiece one."""

  def __init__(self, tokenizer: FullTokenizer, seq_length: int, text_fields: Sequence[str],
               name: str):
    super().__init__(name=name)
    self.tokenizer = tokenizer
    self.raw_text = bool(tokenizer.spm_model_file)
    self._ids = (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    self.seq_length, self.text_fields = seq_length, list(text_fields)
    if self.raw_text:
      self.tokenize = lite.LiteTokenizer(tokenizer)
      spec = [tf.TensorSpec([1], tf.string, name=f) for f in self.text_fields]
      self.serve = tf.function(self._serve_text, input_signature=spec, autograph=False)
    else:
      # BERT's basic tokenization (CJK split, Unicode classes, regular expressions) has
      # no TFLite kernels, and tensorflow-text's TFLite FastBertTokenizer differs from it
      # (README): a WordPiece model takes the ids FullTokenizer packs.
      spec = [tf.TensorSpec([1, seq_length], tf.int32, name=k) for k in INPUT_KEYS]
      self.serve = tf.function(lambda input_word_ids, input_mask, input_type_ids: self._serve(
          dict(input_word_ids=input_word_ids, input_mask=input_mask,
               input_type_ids=input_type_ids)), input_signature=spec, autograph=False)

  @property
  def input_names(self) -> List[str]:
    """The signature's input names."""
    return self.text_fields if self.raw_text else list(INPUT_KEYS)

  def example(self, texts: Sequence[str]) -> Dict[str, np.ndarray]:
    """One example's text fields as the signature's inputs (NumPy, batch 1)."""
    if self.raw_text:
      return {f: np.array([t.encode("utf-8")], dtype=object)
              for f, t in zip(self.text_fields, texts)}
    packed = packing.pack_texts(self.tokenizer, texts, self.seq_length)
    return {k: np.array([packed[k]], dtype=np.int32) for k in INPUT_KEYS}

  def _serve_text(self, *texts):
    return self._serve(lite.pack_one([self.tokenize(t) for t in texts], self.seq_length,
                                     *self._ids))

  def _serve(self, inputs: Dict[str, tf.Tensor]):
    """The encoder's int32 [1, S] inputs -> the outputs."""
    raise NotImplementedError

  def answer(self, outputs: Dict[str, np.ndarray]):
    """One example's answer from the signature's outputs, as a value `==` compares (a
    label, a label set, the tags), or None for outputs that answer with no decision."""
    del outputs
    return None


class LiteClassifier(_LiteModule):
  """Raw text of one example -> probabilities, in TFLite-convertible ops.

  Args:
    model: the fine-tuned classifier (an AlbertEncoder or hub.KerasLayer inside).
    tokenizer: its FullTokenizer: SentencePiece (reproduced by `lite.LiteTokenizer`, the
      signature takes raw text) or WordPiece (the signature takes packed ids).
    seq_length: packed length.
    text_fields: the task's text fields, one or two segments.
    problem: its `albert_tf.problems.Problem`, which says the outputs: `probabilities`
      [1, C] (softmax of one label, or each label's sigmoid) or `score` [1].
    threshold: a multi-label run's threshold (one, or one per label): its answers' (not
      in the file, which returns the probabilities).
  """

  def __init__(self, model: AlbertClassifier, tokenizer: FullTokenizer, seq_length: int,
               text_fields: Sequence[str], problem: Problem, threshold=0.5):
    self.model, self.problem, self.threshold = model, problem, threshold
    random_generators(model)   # made now: one made in the first trace traces it twice
    super().__init__(tokenizer, seq_length, text_fields, "albert_lite_classifier")

  def _serve(self, inputs):
    return self.problem.lite_outputs(self.model(inputs, training=False))        # logits [1, C]

  def answer(self, outputs):
    """The label, or a multi-label's label set; None for a score."""
    if not self.problem.labels:
      return None
    answer = self.problem.answer_of_outputs(outputs["probabilities"], self.threshold)
    return answer.get("label", answer.get("labels"))


class LiteTagger(_LiteModule):
  """One sentence -> a tag id per packed position, in TFLite-convertible ops.

  The signature takes the raw sentence (`sentence`, SentencePiece) or its packed ids
  (WordPiece) and returns `tag_ids` [1, S] (indices into the run's labels.txt; the tag of a
  word is the one at its first piece), `input_word_ids` and `input_mask` [1, S] (the packed
  pieces: with SentencePiece a word's first piece is the one that starts with "\u2581").
  Sentences are packed at `seq_length` (longer ones are cut: no windows on device).

  Args:
    model: the fine-tuned AlbertTokenClassifier.
    tokenizer, seq_length: as LiteClassifier's.
  """

  def __init__(self, model, tokenizer: FullTokenizer, seq_length: int):
    self.model = model
    random_generators(model)   # made now: one made in the first trace traces it twice
    super().__init__(tokenizer, seq_length, ["sentence"], "albert_lite_tagger")

  def _serve(self, inputs):
    logits = self.model(inputs, training=False)                                  # [1, S, C]
    return {"tag_ids": tf.argmax(logits, -1, output_type=tf.int32),            # [1, S]
            "input_word_ids": inputs["input_word_ids"],                        # [1, S]
            "input_mask": inputs["input_mask"]}                                # [1, S]

  def answer(self, outputs):
    """The tag ids of the packed pieces."""
    return np.asarray(outputs["tag_ids"])[np.asarray(outputs["input_mask"]) > 0].tolist()


class LiteEncoder(_LiteModule):
  """Raw text of one example -> `sequence_output` [1, S, H], `pooled_output` [1, H] and
  the `input_mask` [1, S] of the packed tokens, for a head of one's own on device.

  Args:
    encoder: an AlbertEncoder, or hub.KerasLayer of an exported encoder.
    tokenizer: its FullTokenizer (SentencePiece: raw text in; WordPiece: packed ids in).
    seq_length: packed length.
    text_fields: the text fields, one or two segments.
  """

  def __init__(self, encoder, tokenizer: FullTokenizer, seq_length: int,
               text_fields: Sequence[str]):
    self.encoder = encoder
    random_generators(encoder)   # made now: one made in the first trace traces it twice
    super().__init__(tokenizer, seq_length, text_fields, "albert_lite_encoder")

  def _serve(self, inputs):
    if isinstance(self.encoder, AlbertEncoder):   # both outputs: no second first-token path
      outputs = self.encoder(inputs, training=False, uses_sequence_output=True)
    else:
      outputs = self.encoder(inputs, training=False)
    return {"sequence_output": outputs["sequence_output"],                     # [1, S, H]
            "pooled_output": outputs["pooled_output"],                         # [1, H]
            "input_mask": inputs["input_mask"]}                                # [1, S]


def custom_op_registerers() -> list:
  """The TF Text ops' registration functions, for TFLite interpreters and the converter."""
  return list(tf_text.tflite_registrar.SELECT_TFTEXT_OPS)


def load_interpreter(model_path: str = None, model_content: bytes = None, num_threads: int = 1,
                     preserve_all_tensors: bool = False):
  """A LiteRT interpreter (`ai_edge_litert`) with the TF Text ops, else TF's own
  (`preserve_all_tensors`: every intermediate tensor readable after a call)."""
  try:
    from ai_edge_litert.interpreter import InterpreterWithCustomOps as interpreter  # pylint: disable=g-import-not-at-top
  except ImportError:  # LiteRT is in the [test] extra; TF's interpreter runs the same file
    interpreter = tf.lite.Interpreter
  return interpreter(custom_op_registerers=custom_op_registerers(), model_path=model_path,
                     model_content=model_content, num_threads=num_threads,
                     experimental_preserve_all_tensors=preserve_all_tensors)


class Converted(NamedTuple):
  """A converted file; for `int8`, the dense layers and embedding tables (their ops'
  output names) it keeps in float32, of `quantizable`, so that it answers as float32."""
  blob: bytes
  kept_in_float: Sequence[str] = ()
  quantizable: int = 0


def convert(module: _LiteModule, quantization: str = "none",
            representative: Optional[Callable[[], Iterator[Dict[str, np.ndarray]]]] = None
            ) -> Converted:
  """The TFLite flatbuffer of `module.serve`, quantized as asked.

  `float16` stores weights in float16; `dynamic_int8` stores weights in int8
  and quantizes activations on the fly; `int8` quantizes activations too,
  with ranges calibrated on `representative()` (dicts of string [1] arrays),
  keeping in float32 the fewest layers that make it answer as float32 there (`_int8`).
  """
  if quantization not in QUANTIZATIONS:
    raise ValueError(f"--quantization={quantization}: one of {', '.join(QUANTIZATIONS)}")
  with inference_only():   # no custom gradients for the converter's SavedModel to trace
    serve = module.serve.get_concrete_function()
  # What the converter saves (and loads back) to convert: what `serve` reads, not the Keras
  # model, whose own saving traces its calls again for metadata no converter reads.
  saved = tf.__internal__.tracking.AutoTrackable()
  saved.variables = list(module.variables)
  saved.tokenize = getattr(module, "tokenize", None)
  converter = tf.lite.TFLiteConverter.from_concrete_functions([serve], saved)
  converter.allow_custom_ops = True   # the TF Text tokenizer ops, registered at run time
  if quantization != "none":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if quantization == "float16":
    converter.target_spec.supported_types = [tf.float16]
  if quantization != "int8":
    return Converted(converter.convert())
  if representative is None:
    raise ValueError("--quantization=int8 needs representative examples (--data_dir)")
  converter.representative_dataset = lambda: ([d[f] for f in module.input_names]
                                              for d in representative())
  # What tf.lite.experimental.QuantizationDebugger does to keep chosen ops in float,
  # without its interpreters (they cannot load the TF Text ops): calibrate, then quantize.
  converter.target_spec._experimental_custom_op_registerers = custom_op_registerers()  # pylint: disable=protected-access
  converter._experimental_calibrate_only = True  # pylint: disable=protected-access
  examples = list(representative())
  calibrated, outputs = _measured_ranges(converter.convert(), examples)
  return _int8(calibrated, module, examples, outputs)


SENSITIVITY_EXAMPLES = 25   # the calibration examples each layer's sensitivity is measured on
PROBABILITY_CHANGE = 0.003  # how far int8 may move a probability, on average over them all


def _int8(calibrated: bytes, module: _LiteModule, examples: Sequence[Dict[str, np.ndarray]],
          want: Sequence[Dict[str, np.ndarray]]) -> Converted:
  """`int8`'s file of the `calibrated` float32 one: int8 dense layers and embedding tables
  (`_kept_in_float`), but for the fewest of them that, kept in float32, let the file give
  float32's answers (`module.answer` of `want`, the calibrated file's outputs) on every
  calibration example, with probabilities within `PROBABILITY_CHANGE` of float32's on
  average, the most sensitive first. A module that answers with no decision (a score)
  gets them all in int8.

  Why: int8 activations have one scale per tensor, and each quantized layer moves the
  outputs a little (the tests' multi-label run, H=32, seeds 0-3: a probability by
  0.004-0.007 on average, which flipped 0.5-1.6% of its test decisions). No single
  layer is to blame, but some move the outputs 10 times as much as others: the first
  layer's query/key/value projection (whose input, the embeddings projected to H, is not
  normalized), the classifier, the embedding projection. Each
  layer's sensitivity is how far the file with that layer alone in int8 moves the answers
  (then the float outputs) from float32's on `SENSITIVITY_EXAMPLES` examples; layers are
  then kept in float32, the most sensitive first, until no answer of `examples` differs
  and the probabilities moved by 0.003 at most on average. Not only the answers: the
  calibration examples are training rows, which the model answers with more confidence
  than new text; a file of that test (seed 11, 1,200 steps with 80 of warm-up) whose
  answers all agreed on them kept 0.986 of the test decisions. With the probabilities
  held too, seeds 0-11 kept 0.99-1.0 (1 to 12 layers of 13 kept in float32).
  """
  from tensorflow.lite.python import convert as lite_convert  # pylint: disable=g-import-not-at-top
  from albert_tf.progress import progress_bar  # pylint: disable=g-import-not-at-top
  float_ops = _kept_in_float(calibrated)

  def quantize(kept: Sequence[str]) -> bytes:
    return lite_convert.mlir_quantize(calibrated, disable_per_channel=False,
                                      fully_quantize=False, denylisted_ops=float_ops,
                                      denylisted_nodes=list(kept))

  answers = [module.answer(o) for o in want]
  candidates = _quantizable(calibrated)
  every = quantize([])
  if all(a is None for a in answers):
    return Converted(every, (), len(candidates))

  def off(blob: bytes) -> bool:
    got = _outputs(blob, examples)
    if any(module.answer(g) != a for g, a in zip(got, answers)):
      return True
    moved = [np.abs(g["probabilities"] - w["probabilities"]).mean()
             for g, w in zip(got, want) if "probabilities" in w]
    return bool(moved) and float(np.mean(moved)) > PROBABILITY_CHANGE

  if not off(every):
    return Converted(every, (), len(candidates))
  sample = SENSITIVITY_EXAMPLES

  def sensitivity(name: str):
    got = _outputs(quantize([c for c in candidates if c != name]), examples[:sample])
    moved = [np.abs(g[k] - w[k]).mean() for g, w in zip(got, want) for k in w
             if w[k].dtype == np.float32]
    flips = sum(module.answer(g) != a for g, a in zip(got, answers))
    return flips, float(np.mean(moved)) if moved else 0.0

  changes = {name: sensitivity(name)
             for name in progress_bar(candidates, desc="int8: each layer's sensitivity",
                                      unit="layer")}
  order = sorted(candidates, key=changes.get, reverse=True)   # the most sensitive first
  blob, count = every, 0
  while count < len(order):
    count += 1
    blob = quantize(order[:count])
    if not off(blob):
      break
  return Converted(blob, order[:count], len(order))


def _outputs(blob: bytes, examples: Sequence[Dict[str, np.ndarray]]
             ) -> List[Dict[str, np.ndarray]]:
  """The file's signature outputs on each example."""
  runner = load_interpreter(model_content=blob).get_signature_runner()
  return [{k: np.array(v) for k, v in runner(**example).items()} for example in examples]


def _quantizable(model: bytes) -> List[str]:
  """The output names of the ops `int8` quantizes (dense layers, embedding lookups):
  the names `denylisted_nodes` keeps in float32."""
  interpreter = load_interpreter(model_content=model)
  tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
  return [tensors[op["outputs"][0]]["name"]
          for op in interpreter._get_ops_details()  # pylint: disable=protected-access
          if op["op_name"] in ("FULLY_CONNECTED", "GATHER")
          and tensors[op["outputs"][0]]["dtype"] == np.float32]


def _measured_ranges(calibrated: bytes, examples: Sequence[Dict[str, np.ndarray]]
                     ) -> Tuple[bytes, List[Dict[str, np.ndarray]]]:
  """`calibrated` with each range its calibration recorded replaced by the range the
  tensor's values take on `examples` (the signature's inputs), read from a LiteRT
  interpreter that keeps every tensor; and the signature's outputs on each example.

  TFLite's calibrator (TensorFlow 2.20) records ranges that are not the tensors' own:
  on the tests' fine-tuned MRPC classifier, 91 of them differed, the second layer's
  attention output among them ([-1.13, 1.07] where its values reach 3.6), so int8
  clipped it and the file agreed with the float32 model on 0.47 of the dev labels;
  with the measured ranges, on 1.0.
  """
  from tensorflow.lite.tools import flatbuffer_utils  # pylint: disable=g-import-not-at-top
  interpreter = load_interpreter(model_content=calibrated, preserve_all_tensors=True)
  runner = interpreter.get_signature_runner()
  floats = [t["index"] for t in interpreter.get_tensor_details() if t["dtype"] == np.float32]
  low, high, outputs = {}, {}, []
  for example in examples:
    outputs.append({k: np.array(v) for k, v in runner(**example).items()})
    for i in floats:
      try:
        values = interpreter.get_tensor(i)
      except ValueError:   # a constant or a tensor the call left unset
        continue
      if values.size:
        low[i] = min(low.get(i, np.inf), float(values.min()))
        high[i] = max(high.get(i, -np.inf), float(values.max()))
  model = flatbuffer_utils.convert_bytearray_to_object(calibrated)
  for i, tensor in enumerate(model.subgraphs[0].tensors):   # the interpreter's indices
    recorded = tensor.quantization
    if recorded is not None and recorded.min is not None and len(recorded.min) == 1 and i in low:
      recorded.min = np.array([low[i]], np.float32)
      recorded.max = np.array([high[i]], np.float32)
  return bytes(flatbuffer_utils.convert_object_to_bytearray(model)), outputs


def _kept_in_float(model: bytes) -> list:
  """The op types `int8` leaves in float32: all but the matmuls and the embedding lookups.

  Measured on the tests' fine-tuned classifier (dev accuracy 0.98 in float):
  every op in int8 gives 0.31, and the attention's batched matmuls alone make
  the difference (scores next to the -10000 mask bias, probabilities times
  values); int8 weights (per channel) and activations (per tensor) for the
  dense layers and the embedding tables give 0.985.
  """
  interpreter = load_interpreter(model_content=model)
  return sorted({op["op_name"] for op in interpreter._get_ops_details()  # pylint: disable=protected-access
                 if op["op_name"] not in ("FULLY_CONNECTED", "GATHER")
                 and not op["op_name"].startswith("TFText")})


def label_agreement(model_path: str, module: _LiteModule,
                    examples: Sequence[Dict[str, np.ndarray]]) -> Optional[float]:
  """The fraction of `examples` (the signature's inputs) whose answer (`module.answer`: a
  label, a multi-label's set, the tags) the .tflite file gives as `module` does in
  float32; None for a module that answers with no decision (a score, an encoder)."""
  runner = load_interpreter(model_path=model_path).get_signature_runner()
  same = []
  for example in examples:
    want = module.serve(*[tf.constant(example[k]) for k in module.input_names])
    want = module.answer({k: v.numpy() for k, v in want.items()})
    if want is None:
      return None
    same.append(module.answer(runner(**example)) == want)
  return float(np.mean(same)) if same else None


def latency_ms(model_path: str, inputs: Dict[str, np.ndarray], num_threads: int,
               runs: int = 20) -> float:
  """Median milliseconds of one LiteRT call on `inputs` (after one warm-up call)."""
  runner = load_interpreter(model_path=model_path, num_threads=num_threads).get_signature_runner()
  runner(**inputs)
  times = []
  for _ in range(runs):
    start = time.perf_counter()
    runner(**inputs)
    times.append(time.perf_counter() - start)
  return 1000 * float(np.median(times))
