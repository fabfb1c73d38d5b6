"""grove from Python: the batched Craft world and readers of grove's files,
over the shared library libgrove (ctypes + numpy). See python/README.md.

    import grove
    env = grove.Craft(256, ["AC", "CD"], seed=1)      # envs/craft.h batch
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step(actions)
    header, episodes = grove.read_replay("demos.replay", observations=True)
    ck = grove.read_checkpoint("runs/s1/best.ckpt")   # named numpy arrays
    m = grove.read_metrics("runs/s1/metrics.csv")     # numpy columns
"""
from ._lib import GroveError, find_library
from .checkpoint import Checkpoint, read_checkpoint
from .craft import (ACTIONS, N_ACTIONS, OBS_SIZE, Craft, World, make_config,
                    parse_task, subtask_names)
from .metrics import read_metrics
from .replay import Replay, read_replay, verify_replay

__all__ = ["ACTIONS", "N_ACTIONS", "OBS_SIZE", "Checkpoint", "Craft",
           "GroveError", "Replay", "World", "find_library", "make_config",
           "parse_task", "read_checkpoint", "read_metrics", "read_replay",
           "subtask_names", "verify_replay"]
