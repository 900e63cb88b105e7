"""The original TF1 variable names of a model, and assigning weights by them.

The table below names every variable of the original graph (google-research/albert
`modeling.py` and `run_pretraining.py`) and the Keras weight it maps to. Keras weights
keep the original layouts, so no tensor is transposed here. Every file layout albert_tf
reads (`albert_tf.formats`) maps its own names onto these, and `assign_by_original_name`
checks every tensor's shape before anything is assigned.
"""

import dataclasses
import re
from typing import Callable, Dict, List, Mapping, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import AlbertPretrainer


def _dense(prefix: str, layer) -> Dict[str, tf.Variable]:
  return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix: str, layer) -> Dict[str, tf.Variable]:
  return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def encoder_variable_map(encoder: AlbertEncoder) -> Dict[str, tf.Variable]:
  """Original TF1 name -> Keras variable, for every weight of the encoder."""
  emb = encoder.embeddings
  names = {
      "bert/embeddings/word_embeddings": emb.word_embeddings,
      "bert/embeddings/position_embeddings": emb.position_embeddings,
      "bert/embeddings/token_type_embeddings": emb.token_type_embeddings,
      **_layer_norm("bert/embeddings/LayerNorm", emb.layer_norm),
  }
  if encoder.embedding_projection is not None:
    names.update(_dense("bert/encoder/embedding_hidden_mapping_in", encoder.embedding_projection))
  for g, group in enumerate(encoder.groups):
    for k, block in enumerate(group):
      p = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
      names.update({
          **_dense(f"{p}/attention_1/self/query", block.query),
          **_dense(f"{p}/attention_1/self/key", block.key),
          **_dense(f"{p}/attention_1/self/value", block.value),
          **_dense(f"{p}/attention_1/output/dense", block.attention_output),
          **_layer_norm(f"{p}/LayerNorm", block.attention_layer_norm),
          **_dense(f"{p}/ffn_1/intermediate/dense", block.intermediate),
          **_dense(f"{p}/ffn_1/intermediate/output/dense", block.output_dense),
          **_layer_norm(f"{p}/LayerNorm_1", block.output_layer_norm),
      })
  names.update(_dense("bert/pooler/dense", encoder.pooler))
  return names


def pretrainer_head_variable_map(model: AlbertPretrainer) -> Dict[str, tf.Variable]:
  """Original TF1 name -> Keras variable, for the masked-LM and sentence-order heads."""
  mlm, sop = model.masked_lm, model.sentence_order
  return {
      **_dense("cls/predictions/transform/dense", mlm.dense),
      **_layer_norm("cls/predictions/transform/LayerNorm", mlm.layer_norm),
      "cls/predictions/output_bias": mlm.output_bias,
      "cls/seq_relationship/output_weights": sop.output_weights,
      "cls/seq_relationship/output_bias": sop.output_bias,
  }


def variable_map(model) -> Dict[str, tf.Variable]:
  """Every original-named variable of an AlbertEncoder, AlbertPretrainer or task model
  (a task model's head too when it has `original_head_variables`)."""
  if isinstance(model, AlbertPretrainer):
    return {**encoder_variable_map(model.encoder), **pretrainer_head_variable_map(model)}
  if isinstance(model, AlbertEncoder):
    return encoder_variable_map(model)
  encoder = getattr(model, "encoder", None)
  if isinstance(encoder, AlbertEncoder):
    heads = getattr(model, "original_head_variables", None)
    return {**encoder_variable_map(encoder), **(heads() if heads else {})}
  raise TypeError(f"cannot map original checkpoint names onto {type(model).__name__}")


@dataclasses.dataclass
class LoadReport:
  """What `load_original_checkpoint` did."""
  path: str
  loaded: List[str]                 # model variables restored, by original name
  freshly_initialized: List[str]    # head variables the checkpoint lacked (kept as initialized)
  unused: List[str]                 # checkpoint variables outside `bert/` the model has no use for

  def logged(self) -> "LoadReport":
    """Logs what was restored, left fresh and not used; returns itself."""
    logging.info("Restored %d variables from %s", len(self.loaded), self.path)
    if self.freshly_initialized:
      logging.warning("Not in %s, left freshly initialized: %s", self.path,
                      ", ".join(self.freshly_initialized))
    if self.unused:
      logging.info("Not used from %s: %s", self.path, ", ".join(self.unused))
    return self


def is_head(name: str) -> bool:
  """Whether an original name belongs to a head (cls/..., output_weights) and not the encoder."""
  return not name.startswith("bert/")


# name -> (shape in the original layout, a function that reads the tensor in that layout)
Stored = Mapping[str, Tuple[Tuple[int, ...], Callable[[], np.ndarray]]]


def assign_by_original_name(model, stored: Stored, path: str, init_from_group0: bool = False,
                            mismatched_heads_fresh: bool = False,
                            unexpected: Tuple[str, ...] = (),
                            noun: str = "checkpoint") -> LoadReport:
  """Assigns tensors named by original TF1 names to `model`'s variables.

  Every encoder variable (`bert/...`) must be stored with the right shape, and every
  stored `bert/...` tensor must belong to the model; otherwise one ValueError lists all
  missing, unexpected and mis-shaped tensors and nothing is assigned. Heads the source
  lacks stay freshly initialized and are reported (so do heads of another shape, a head
  trained for other labels, when `mismatched_heads_fresh`).

  Args:
    model: AlbertEncoder, AlbertPretrainer, or a task model with an `encoder`.
    stored: {original name: (shape, read)} of what the source holds.
    path: the source, for messages and the report.
    init_from_group0: a group the source lacks (`group_<g>`) starts from its `group_0`
      (the original's `--init_from_group0`).
    mismatched_heads_fresh: a head stored in another shape is left fresh, not an error.
    unexpected: names of the source's own that map to no original name (listed as unexpected).
    noun: what the source is called in the error ("checkpoint", "TF-Hub module", ...).

  Returns:
    A LoadReport by original name.
  """
  stored = dict(stored)
  targets = variable_map(model)
  if init_from_group0:
    for name in targets:
      group0 = re.sub(r"/group_\d+/", "/group_0/", name)
      if name not in stored and group0 in stored:
        stored[name] = stored[group0]
  want = {n: tuple(v.shape.as_list()) for n, v in targets.items()}
  fresh = sorted(n for n in targets if n not in stored)
  misshaped, plan = [], {}
  for name in targets:
    if name not in stored:
      continue
    if tuple(stored[name][0]) == want[name]:
      plan[name] = stored[name][1]
    elif mismatched_heads_fresh and is_head(name):
      fresh.append(f"{name} (stored as {list(stored[name][0])})")
    else:
      misshaped.append(f"{name}: {noun} {list(stored[name][0])} vs model {list(want[name])}")
  problems = ((f"missing from the {noun}", [n for n in fresh if not is_head(n)]),
              (f"unexpected in the {noun}", sorted([n for n in stored if n not in targets and not is_head(n)]
                                    + list(unexpected))),
              ("shape mismatch", sorted(misshaped)))
  if any(items for _, items in problems):
    lines = [f"{noun} {path} does not match the model ({type(model).__name__}, "
             f"{len(targets)} variables):"]
    for title, items in problems:
      if items:
        lines.append(f"  {title} ({len(items)}):")
        lines.extend(f"    {item}" for item in items)
    raise ValueError("\n".join(lines))
  values = {name: read() for name, read in plan.items()}   # all read before any is assigned
  for name, value in values.items():
    targets[name].assign(np.asarray(value).astype(targets[name].dtype.as_numpy_dtype))
  return LoadReport(path=path, loaded=sorted(values), freshly_initialized=sorted(fresh),
                    unused=sorted(n for n in stored if n not in targets)).logged()
