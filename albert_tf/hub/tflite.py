"""TFLite (LiteRT) export of a fine-tuned classifier: raw text in, probabilities out.

The model file holds the whole pipeline for one example: ALBERT's
tokenization (tensorflow-text's TFLite ops, see `albert_tf.text.lite`),
packing at `max_seq_length`, the encoder and the classification head. Its
`serving_default` signature takes the task's text fields as string [1]
tensors (`sentence1`, `sentence2` for pair tasks, `sentence` for single
sentences) and returns `probabilities` [1, C], or `score` [1] for STS-B.
Running it needs the TF Text custom ops registered with the interpreter
(`load_interpreter` does it).
"""

import time
from typing import Callable, Dict, Iterator, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.modeling.models import AlbertClassifier
from albert_tf.text import lite
from albert_tf.text.tokenization import FullTokenizer

QUANTIZATIONS = ("none", "float16", "dynamic_int8", "int8")


class LiteClassifier(tf.Module):
  """Raw text of one example -> probabilities, in TFLite-convertible ops.

  Args:
    model: the fine-tuned classifier (an AlbertEncoder or hub.KerasLayer inside).
    tokenizer: its FullTokenizer (SentencePiece), reproduced by `lite.LiteTokenizer`.
    seq_length: packed length.
    text_fields: the signature's string [1] inputs, one or two segments.
    regression: return `score` [1] instead of `probabilities` [1, C].
  """

  def __init__(self, model: AlbertClassifier, tokenizer: FullTokenizer, seq_length: int,
               text_fields: Sequence[str], regression: bool):
    super().__init__(name="albert_lite_classifier")
    self.model, self.tokenize = model, lite.LiteTokenizer(tokenizer)
    self._ids = (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    self.seq_length, self.text_fields, self.regression = seq_length, list(text_fields), regression
    spec = [tf.TensorSpec([1], tf.string, name=f) for f in self.text_fields]
    self.serve = tf.function(self._serve, input_signature=spec)

  def pack(self, *texts: tf.Tensor) -> Dict[str, tf.Tensor]:
    """String [1] tensors -> the encoder's int32 [1, S] inputs."""
    return lite.pack_one([self.tokenize(t) for t in texts], self.seq_length, *self._ids)

  def _serve(self, *texts):
    logits = self.model(self.pack(*texts), training=False)                       # [1, C]
    if self.regression:
      return {"score": logits[:, 0]}                                            # [1]
    return {"probabilities": tf.nn.softmax(logits, axis=-1)}                    # [1, C]


def custom_op_registerers() -> list:
  """The TF Text ops' registration functions, for TFLite interpreters and the converter."""
  return list(tf_text.tflite_registrar.SELECT_TFTEXT_OPS)


def load_interpreter(model_path: str = None, model_content: bytes = None, num_threads: int = 1):
  """A LiteRT interpreter (`ai_edge_litert`) with the TF Text ops, else TF's own."""
  try:
    from ai_edge_litert.interpreter import InterpreterWithCustomOps as interpreter  # pylint: disable=g-import-not-at-top
  except ImportError:  # LiteRT is in the [test] extra; TF's interpreter runs the same file
    interpreter = tf.lite.Interpreter
  return interpreter(custom_op_registerers=custom_op_registerers(), model_path=model_path,
                     model_content=model_content, num_threads=num_threads)


def convert(module: LiteClassifier, quantization: str = "none",
            representative: Optional[Callable[[], Iterator[Dict[str, np.ndarray]]]] = None
            ) -> bytes:
  """The TFLite flatbuffer of `module.serve`, quantized as asked.

  `float16` stores weights in float16; `dynamic_int8` stores weights in int8
  and quantizes activations on the fly; `int8` quantizes activations too,
  with ranges calibrated on `representative()` (dicts of string [1] arrays).
  """
  if quantization not in QUANTIZATIONS:
    raise ValueError(f"--quantization={quantization}: one of {', '.join(QUANTIZATIONS)}")
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      [module.serve.get_concrete_function()], module)
  converter.allow_custom_ops = True   # the TF Text tokenizer ops, registered at run time
  if quantization != "none":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if quantization == "float16":
    converter.target_spec.supported_types = [tf.float16]
  if quantization != "int8":
    return converter.convert()
  if representative is None:
    raise ValueError("--quantization=int8 needs representative examples (--data_dir)")
  converter.representative_dataset = lambda: ([d[f] for f in module.text_fields]
                                              for d in representative())
  # What tf.lite.experimental.QuantizationDebugger does to keep chosen ops in float,
  # without its interpreters (they cannot load the TF Text ops): calibrate, then quantize.
  converter.target_spec._experimental_custom_op_registerers = custom_op_registerers()  # pylint: disable=protected-access
  converter._experimental_calibrate_only = True  # pylint: disable=protected-access
  calibrated = converter.convert()
  from tensorflow.lite.python import convert as lite_convert  # pylint: disable=g-import-not-at-top
  return lite_convert.mlir_quantize(calibrated, disable_per_channel=False, fully_quantize=False,
                                    denylisted_ops=_kept_in_float(calibrated))


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
