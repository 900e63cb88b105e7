"""Command-line flags generated from options dataclasses, so a flag and its field cannot drift.

A field's name is the flag's name, its default the flag's default, and its
metadata (from `option`) the help text and, for a choice, the allowed values.
A field without a default is a required flag.

  @dataclasses.dataclass(kw_only=True)
  class Options:
    output_dir: str = option(help="Where results go.")            # required
    dtype: str = option("float32", "Compute dtype.", choices=("float32", "bfloat16"))

  define_flags(Options)            # in the entry script, at import time
  run_with_flags(argv, Options, run)
"""

import dataclasses
import typing
from typing import Callable, Dict, Optional, Sequence

from absl import app, flags

_REQUIRED = dataclasses.MISSING


def option(default=_REQUIRED, help: str = "", choices: Optional[Sequence[str]] = None):  # pylint: disable=redefined-builtin
  """A dataclass field that is also a command-line flag (no default: a required flag)."""
  metadata = dict(help=help, choices=tuple(choices) if choices else None)
  return dataclasses.field(default=default, metadata=metadata)


def _base_type(annotation):
  """str for Optional[str], and so on."""
  args = [a for a in typing.get_args(annotation) if a is not type(None)]
  return args[0] if typing.get_origin(annotation) is typing.Union and len(args) == 1 \
      else annotation


def define_flags(options_type, flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines one absl flag per field of `options_type` (fields already defined are kept)."""
  hints = typing.get_type_hints(options_type)
  required = []
  for field in dataclasses.fields(options_type):
    if field.name in flag_values:
      continue
    kind = _base_type(hints[field.name])
    default = None if field.default is _REQUIRED else field.default
    help_text = field.metadata.get("help") or field.name
    choices = field.metadata.get("choices")
    if choices:
      flags.DEFINE_enum(field.name, default, list(choices), help_text, flag_values=flag_values)
    elif kind is bool:
      flags.DEFINE_bool(field.name, default, help_text, flag_values=flag_values)
    elif kind is int:
      flags.DEFINE_integer(field.name, default, help_text, flag_values=flag_values)
    elif kind is float:
      flags.DEFINE_float(field.name, default, help_text, flag_values=flag_values)
    elif kind is str:
      flags.DEFINE_string(field.name, default, help_text, flag_values=flag_values)
    else:
      raise TypeError(f"{options_type.__name__}.{field.name}: no flag type for {kind}")
    if field.default is _REQUIRED:
      required.append(field.name)
  if required:
    flags.mark_flags_as_required(required, flag_values=flag_values)


def options_from_flags(options_type, flag_values: flags.FlagValues = flags.FLAGS):
  """An `options_type` holding the flags' values."""
  return options_type(**{f.name: flag_values[f.name].value
                         for f in dataclasses.fields(options_type)})


def run_with_flags(argv: Sequence[str], options_type,
                   run: Callable[..., Dict[str, Dict[str, float]]]):
  """Builds `options_type` from the flags, calls `run(options)`, turns input errors
  into usage errors (no traceback) and prints the results."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    results = run(options_from_flags(options_type))
  except (FileNotFoundError, FileExistsError, ValueError) as e:
    raise app.UsageError(str(e)) from None
  for kind, metrics in (results or {}).items():
    if isinstance(metrics, dict):
      print(f"{kind}: " + ", ".join(f"{k} = {v:.4g}" if isinstance(v, (int, float)) else
                                    f"{k} = {v}" for k, v in metrics.items()))
  return results
