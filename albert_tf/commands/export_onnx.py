"""hub_export/export_onnx.py: an encoder or a fine-tuned run as an ONNX file.

The model comes from any source `convert.read_source` reads: `--albert_directory` (any
model layout or name) or `--export_path` (an encoder SavedModel) gives the encoder;
`--model_dir` (a run_classifier.py, run_race.py, run_squad.py or run_ner.py output directory) gives
that task's model and head. `albert_tf.export.onnx` writes the file.
"""

import dataclasses
from typing import Dict, Optional

from albert_tf.cli import Checked, option
from albert_tf.export.onnx import QUANTIZATIONS, check_targets, write_onnx
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.commands import convert


@dataclasses.dataclass(kw_only=True)
class OnnxOptions(Checked):
  """hub_export/export_onnx.py's flags."""
  model_dir: Optional[str] = option(None, "A run_classifier.py, run_race.py, run_squad.py or "
                                    "run_ner.py --output_dir: its model and head (logits, or "
                                    "start and end logits).")
  albert_directory: Optional[str] = option(None, "Instead, a bare encoder: any model "
                                           "directory or name albert_tf reads.")
  export_path: Optional[str] = option(None, "Instead, a bare encoder: an encoder SavedModel "
                                      "(hub_export/export.py's, or a TF-Hub module).")
  output_file: str = option(help="The ONNX file to write; its vocabulary and <file>.json go "
                            "beside it.")
  quantization: str = option("none", "none (float32), or dynamic_int8 (onnxruntime's dynamic "
                             "quantization: int8 weights).", choices=QUANTIZATIONS)
  overwrite: bool = option(False, "Replace an existing --output_file and its JSON.")


def run(opts: OnnxOptions) -> Dict[str, Dict[str, object]]:
  """What hub_export/export_onnx.py does."""
  sources = [f"--{k}" for k in ("model_dir", "albert_directory", "export_path")
             if getattr(opts, k)]
  if len(sources) != 1:
    raise ValueError("pass exactly one of --model_dir (a fine-tuned run), --albert_directory "
                     f"or --export_path (a bare encoder); got {', '.join(sources) or 'none'}")
  check_targets(opts.output_file, opts.overwrite)   # before the model is read
  path = opts.model_dir or opts.albert_directory or opts.export_path
  source = convert.read_source(path)
  model = source.model
  if not opts.model_dir and not isinstance(model, AlbertEncoder):
    model = model.encoder
  written = write_onnx(model, opts.output_file, source.tokenizer, opts.quantization,
                       labels=source.labels if opts.model_dir else None,
                       overwrite=opts.overwrite,
                       extra=dict(source=path, max_seq_length=source.max_seq_length
                                  or source.config.max_position_embeddings,
                                  **({"problem_type": source.problem_type}
                                     if opts.model_dir and source.problem_type else {})))
  print(f"Wrote {written['file']} ({written['bytes'] / 2**20:.1f} MiB, {opts.quantization}): "
        f"inputs {', '.join(written['inputs'])}; outputs {', '.join(written['outputs'])}")
  if source.tokenizer is None:
    print("No vocabulary beside it: the source has none")
  return {}
