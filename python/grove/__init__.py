"""grove from Python: the batched Craft world and readers of grove's files,
over the shared library libgrove (ctypes + numpy). See python/README.md."""
from ._lib import GroveError, find_library
from .craft import Craft, World, make_config, parse_task, subtask_names

__all__ = ["Craft", "World", "GroveError", "find_library", "make_config",
           "parse_task", "subtask_names"]
