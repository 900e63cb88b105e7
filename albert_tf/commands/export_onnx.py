"""hub_export/export_onnx.py: an encoder or a fine-tuned run as an ONNX file.

`--model` is any source `albert_tf.sources` reads: a run_classifier.py, run_race.py,
run_squad.py or run_ner.py output directory gives that task's model and head; any other
(a model directory in any layout, an encoder SavedModel, a name) gives the bare encoder.
Its old names (`--model_dir`, `--albert_directory`, `--export_path`) still work.
`albert_tf.export.onnx` writes the file.
"""

import dataclasses
from typing import Dict, Optional

from albert_tf import runs, sources
from albert_tf.cli import Checked, option
from albert_tf.export.onnx import QUANTIZATIONS, check_targets, write_onnx

OLD_NAMES = ("model_dir", "albert_directory", "export_path")


@dataclasses.dataclass(kw_only=True)
class OnnxOptions(Checked):
  """hub_export/export_onnx.py's flags."""
  model: Optional[str] = sources.model_option("A fine-tuning run is written with its head "
                                              "(logits, or start and end logits); any other "
                                              "as the bare encoder.")
  model_dir: Optional[str] = sources.old_name_option()
  albert_directory: Optional[str] = sources.old_name_option()
  export_path: Optional[str] = sources.old_name_option()
  output_file: str = option(help="The ONNX file to write; its vocabulary and <file>.json go "
                            "beside it.")
  quantization: str = option("none", "none (float32), or dynamic_int8 (onnxruntime's dynamic "
                             "quantization: int8 weights).", choices=QUANTIZATIONS)
  overwrite: bool = option(False, "Replace an existing --output_file and its JSON.")


def run(opts: OnnxOptions) -> Dict[str, Dict[str, object]]:
  """What hub_export/export_onnx.py does."""
  path, flag = sources.model_flag(opts, OLD_NAMES)
  check_targets(opts.output_file, opts.overwrite)   # before the model is read
  source = sources.read(path, flag)
  fine_tuned = source.run is not None
  model = source.model if fine_tuned else source.encoder
  written = write_onnx(model, opts.output_file, source.tokenizer, opts.quantization,
                       labels=source.labels if fine_tuned else None,
                       overwrite=opts.overwrite,
                       extra=dict(source=path, max_seq_length=source.max_seq_length
                                  or source.config.max_position_embeddings,
                                  **(source.run.export_metadata()
                                     if fine_tuned and source.problem_type else {})))
  print(f"Wrote {written['file']} ({written['bytes'] / 2**20:.1f} MiB, {opts.quantization}): "
        f"inputs {', '.join(written['inputs'])}; outputs {', '.join(written['outputs'])}")
  if source.tokenizer is None:
    print("No vocabulary beside it: the source has none")
  note = runs.windows_note(source.run, "the ONNX model",
                           "its metadata (and the .json beside it)", pools=True)
  if note:
    print(note)
  return {}
