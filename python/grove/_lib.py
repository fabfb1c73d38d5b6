"""Finding and loading libgrove, and the ctypes mirrors of its C structs.

The library is found through the environment variable GROVE_LIB (the path
of libgrove.so, or of a folder holding it), else in the build folders of
the checkout this package sits in: build/, then build/ci-cpu, then any
other build/*/ (the newest first; sanitizer and fuzz builds are skipped,
since a plain Python cannot load ASan code).

The Structure classes below mirror envs/craft.h and replays/replay.h field
by field (ctypes lays them out as the C compiler does). When one of those
structs changes, change its mirror here: python/tests catch a mismatch.
"""

import ctypes
import glob
import os

# ---- constants of envs/craft.h --------------------------------------------

N_KINDS = 21
N_ACTIONS = 5
N_DIRS = 4
OBS_SIZE = 1075
MAX_SIDE = 32
MAX_CELLS = MAX_SIDE * MAX_SIDE
MAX_SUBTASKS = 16
TASK_NAME_CAP = 32
STATE_MAX_BYTES = MAX_CELLS + 256
TEXT_CAP = (MAX_SIDE + 1) * (2 * MAX_SIDE + 8) + 1

REPLAY_READ_RECOVER = 1
REPLAY_READ_VERIFY = 2

(REC_HEADER, REC_EPISODE_START, REC_KEYFRAME, REC_STEP, REC_EPISODE_END,
 REC_FOOTER) = range(1, 7)


class GroveError(Exception):
    """A failed grove call; the message is gr_last_error()'s."""


# ---- struct mirrors --------------------------------------------------------

class CraftConfig(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int),
                ("primitives", ctypes.c_uint32), ("n_each", ctypes.c_int),
                ("workshops", ctypes.c_int), ("treasure", ctypes.c_int),
                ("coarse_view", ctypes.c_int), ("max_steps", ctypes.c_int),
                ("reward", ctypes.c_int)]


class CraftSubtask(ctypes.Structure):
    _fields_ = [("op", ctypes.c_uint8), ("kind", ctypes.c_uint8)]


class CraftTask(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int),
                ("sub", CraftSubtask * MAX_SUBTASKS),
                ("name", ctypes.c_char * TASK_NAME_CAP),
                ("treasure", ctypes.c_int)]


class CraftWorld(ctypes.Structure):
    _fields_ = [("config", CraftConfig), ("task", CraftTask),
                ("seed", ctypes.c_uint64),
                ("x", ctypes.c_int), ("y", ctypes.c_int),
                ("dir", ctypes.c_int), ("k", ctypes.c_int),
                ("t", ctypes.c_int), ("episode_return", ctypes.c_float),
                ("inventory", ctypes.c_uint16 * N_KINDS),
                ("grid", ctypes.c_uint8 * MAX_CELLS)]


class CraftStep(ctypes.Structure):
    _fields_ = [("reward", ctypes.c_float), ("terminated", ctypes.c_int),
                ("truncated", ctypes.c_int), ("completed", ctypes.c_int),
                ("subtask", ctypes.c_int)]


class CraftLog(ctypes.Structure):
    _fields_ = [("episodes", ctypes.c_uint64), ("successes", ctypes.c_uint64),
                ("steps", ctypes.c_uint64), ("return_sum", ctypes.c_double)]


class CraftBatchOut(ctypes.Structure):
    _fields_ = [("obs", ctypes.c_void_p), ("reward", ctypes.c_void_p),
                ("terminated", ctypes.c_void_p),
                ("truncated", ctypes.c_void_p),
                ("episode_return", ctypes.c_void_p),
                ("episode_length", ctypes.c_void_p)]


class CraftBatch(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("cells", ctypes.c_int),
                ("config", CraftConfig), ("n_tasks", ctypes.c_int),
                ("tasks", ctypes.POINTER(CraftTask)),
                ("base_seed", ctypes.c_uint64),
                ("grid", ctypes.c_void_p), ("x", ctypes.c_void_p),
                ("y", ctypes.c_void_p), ("dir", ctypes.c_void_p),
                ("k", ctypes.c_void_p), ("task", ctypes.c_void_p),
                ("t", ctypes.c_void_p), ("inventory", ctypes.c_void_p),
                ("ret", ctypes.c_void_p), ("episode", ctypes.c_void_p),
                ("seed", ctypes.c_void_p)]


class ReplayHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("env", ctypes.c_char * 16),
                ("env_config", CraftConfig),
                ("recipes", ctypes.c_char * 16),
                ("agent_kind", ctypes.c_char * 32),
                ("agent_checkpoint", ctypes.c_char * 512),
                ("agent_n_options", ctypes.c_uint32),
                ("created", ctypes.c_char * 32),
                ("grove", ctypes.c_char * 64),
                ("keyframe_every", ctypes.c_uint32)]


class ReplayEpisodeStart(ctypes.Structure):
    _fields_ = [("episode", ctypes.c_uint32), ("seed", ctypes.c_uint64),
                ("task", CraftTask)]


class ReplayKeyframe(ctypes.Structure):
    _fields_ = [("episode", ctypes.c_uint32), ("t", ctypes.c_uint32),
                ("state", ctypes.POINTER(ctypes.c_uint8)),
                ("state_len", ctypes.c_size_t), ("hash", ctypes.c_uint64)]


class ReplayStep(ctypes.Structure):
    _fields_ = [("episode", ctypes.c_uint32), ("t", ctypes.c_uint32),
                ("a", ctypes.c_uint8), ("r", ctypes.c_float),
                ("d", ctypes.c_uint8), ("tr", ctypes.c_uint8),
                ("s", ctypes.c_uint32), ("has_o", ctypes.c_uint8),
                ("o", ctypes.c_uint32), ("n_po", ctypes.c_uint32),
                ("po", ctypes.POINTER(ctypes.c_float)),
                ("has_pe", ctypes.c_uint8), ("pe", ctypes.c_float)]


class ReplayEpisodeEnd(ctypes.Structure):
    _fields_ = [("episode", ctypes.c_uint32),
                ("episode_return", ctypes.c_double),
                ("length", ctypes.c_uint32), ("success", ctypes.c_uint8)]


class ReplayIndexEntry(ctypes.Structure):
    _fields_ = [("episode", ctypes.c_uint32), ("t", ctypes.c_uint32),
                ("offset", ctypes.c_uint64)]


class ReplayFooter(ctypes.Structure):
    _fields_ = [("episodes", ctypes.c_uint64), ("steps", ctypes.c_uint64),
                ("crc32", ctypes.c_uint32), ("n_index", ctypes.c_size_t),
                ("index", ctypes.POINTER(ReplayIndexEntry))]


class ReplayRecord(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("offset", ctypes.c_uint64),
                ("size", ctypes.c_uint64),
                ("header", ctypes.POINTER(ReplayHeader)),
                ("start", ReplayEpisodeStart),
                ("keyframe", ReplayKeyframe),
                ("step", ReplayStep),
                ("end", ReplayEpisodeEnd),
                ("footer", ReplayFooter)]


class ReplayReaderStatus(ctypes.Structure):
    _fields_ = [("file_size", ctypes.c_uint64), ("offset", ctypes.c_uint64),
                ("episodes", ctypes.c_uint64), ("steps", ctypes.c_uint64),
                ("keyframes", ctypes.c_uint64), ("complete", ctypes.c_int),
                ("crc_ok", ctypes.c_int), ("truncated", ctypes.c_int),
                ("truncated_at", ctypes.c_uint64), ("seeked", ctypes.c_int)]


class ReplayVerifyResult(ctypes.Structure):
    _fields_ = [("episodes", ctypes.c_uint64), ("steps", ctypes.c_uint64),
                ("keyframes", ctypes.c_uint64), ("successes", ctypes.c_uint64),
                ("crc32", ctypes.c_uint32)]


# ---- finding the library ----------------------------------------------------

LIB_NAME = "libgrove.so"


def _checkout_root():
    # python/grove/_lib.py -> the checkout's root
    return os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))


def find_library():
    """The path of libgrove.so that load() would open (GroveError if none)."""
    env = os.environ.get("GROVE_LIB")
    if env:
        path = os.path.join(env, LIB_NAME) if os.path.isdir(env) else env
        if not os.path.isfile(path):
            raise GroveError("GROVE_LIB=%s: no such file%s" % (
                env, " (looked for %s)" % path if path != env else ""))
        return path
    build = os.path.join(_checkout_root(), "build")
    for path in (os.path.join(build, LIB_NAME),
                 os.path.join(build, "ci-cpu", LIB_NAME)):
        if os.path.isfile(path):
            return path
    others = [p for p in glob.glob(os.path.join(build, "*", LIB_NAME))
              if not any(w in os.path.basename(os.path.dirname(p))
                         for w in ("sanitize", "fuzz"))]
    if others:
        return max(others, key=os.path.getmtime)
    raise GroveError(
        "libgrove.so not found: set GROVE_LIB to its path, or build it in "
        "this checkout (cmake -S . -B build/ci-cpu -DGROVE_CUDA=OFF && "
        "cmake --build build/ci-cpu --target grove_shared); looked in %s"
        % build)


_lib = None


def _proto(lib, name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


def load():
    """The loaded library (once per process), with argument types set."""
    global _lib
    if _lib is not None:
        return _lib
    path = find_library()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise GroveError("%s: cannot load: %s" % (path, e)) from None
    P = ctypes.POINTER
    c_int, c_u64, c_u32 = ctypes.c_int, ctypes.c_uint64, ctypes.c_uint32
    c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p
    c_size = ctypes.c_size_t
    _proto(lib, "gr_last_error", c_char_p)
    _proto(lib, "craft_config_default", None, P(CraftConfig))
    _proto(lib, "craft_config_validate", c_int, P(CraftConfig))
    _proto(lib, "craft_config_set", c_int, P(CraftConfig), c_char_p, c_char_p)
    _proto(lib, "craft_config_for_task", None, P(CraftConfig), P(CraftTask),
           P(CraftConfig))
    _proto(lib, "craft_task_parse", c_int, c_char_p, P(CraftTask))
    _proto(lib, "craft_task_from_subtasks", c_int, P(CraftSubtask), c_int,
           c_char_p, P(CraftTask))
    _proto(lib, "craft_subtask_name", c_int, P(CraftSubtask), c_char_p, c_size)
    _proto(lib, "craft_kind_name", c_char_p, c_int)
    _proto(lib, "craft_action_name", c_char_p, c_int)
    _proto(lib, "craft_treasure_name", c_char_p, c_int)
    _proto(lib, "craft_reward_name", c_char_p, c_int)
    _proto(lib, "craft_primitives_format", None, c_u32, c_char_p, c_size)
    _proto(lib, "craft_episode_seed", c_u64, c_u64, c_u64, c_u64)
    _proto(lib, "craft_world_reset", c_int, P(CraftWorld), P(CraftConfig),
           c_u64, P(CraftTask))
    _proto(lib, "craft_world_step", c_int, P(CraftWorld), c_int, P(CraftStep))
    _proto(lib, "craft_world_observe", None, P(CraftWorld), c_void_p)
    _proto(lib, "craft_state_bytes", c_int, P(CraftWorld), c_void_p, c_size)
    _proto(lib, "craft_state_hash", c_u64, P(CraftWorld))
    _proto(lib, "craft_state_from_bytes", c_int, P(CraftWorld), P(CraftConfig),
           c_char_p, c_size)
    _proto(lib, "craft_world_render_text", c_int, P(CraftWorld), c_char_p,
           c_size)
    _proto(lib, "craft_expert_act", c_int, P(CraftWorld), P(c_int), P(c_int))
    _proto(lib, "craft_batch_init", c_int, P(CraftBatch), P(CraftConfig),
           P(CraftTask), c_int, c_int, c_u64, c_void_p)
    _proto(lib, "craft_batch_free", None, P(CraftBatch))
    _proto(lib, "craft_batch_step", c_int, P(CraftBatch), c_void_p,
           P(CraftBatchOut), P(CraftLog))
    _proto(lib, "craft_batch_observe", None, P(CraftBatch), c_int, c_void_p)
    _proto(lib, "craft_batch_get", None, P(CraftBatch), c_int, P(CraftWorld))
    _proto(lib, "craft_expert_act_batch", None, P(CraftBatch), c_int, c_int,
           c_void_p, c_void_p, c_void_p)
    _proto(lib, "replay_reader_open", c_int, P(c_void_p), c_char_p,
           ctypes.c_uint)
    _proto(lib, "replay_reader_next", c_int, c_void_p, P(ReplayRecord))
    _proto(lib, "replay_reader_header", P(ReplayHeader), c_void_p)
    _proto(lib, "replay_reader_status", None, c_void_p, P(ReplayReaderStatus))
    _proto(lib, "replay_reader_world_before", P(CraftWorld), c_void_p)
    _proto(lib, "replay_reader_close", None, c_void_p)
    _proto(lib, "replay_verify_file", c_int, c_char_p, P(ReplayVerifyResult))
    lib.grove_path = path
    _lib = lib
    return lib


def check(rc):
    """Raises GroveError with gr_last_error() when rc < 0; returns rc."""
    if rc < 0:
        raise GroveError(last_error())
    return rc


def last_error():
    return load().gr_last_error().decode("utf-8", "replace")


def cstr(s):
    # surrogateescape: a path read back from bytes that are not UTF-8
    # (os.fsdecode) turns into those bytes again
    return s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s


def pystr(b):
    return b.decode("utf-8", "replace") if b is not None else None
