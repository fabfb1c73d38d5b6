"""Craft (envs/craft.h): the batched C world as a vector environment, and
single worlds for replays and tests.

    env = grove.Craft(256, ["AC", "CD"], seed=1, n_each=4)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step(actions)

Conventions (gymnasium's vector API, PufferLib's buffers): obs [N, 1075]
float32, reward [N] float32, terminated and truncated [N] bool. A finished
world is reset inside step (the next episode of craft.md §9's seed stream),
so obs[j] is already the first observation of its next episode where
terminated[j] or truncated[j]; info["episode_return"] and
info["episode_length"] hold the finished episode's return and length there.
The arrays step returns are the environment's own buffers, written in place
by the C library on every step (no copy, no allocation): copy what you keep.
"""

import ctypes

import numpy as np

from . import _lib
from ._lib import (CraftBatch, CraftBatchOut, CraftConfig, CraftLog,
                   CraftStep, CraftTask, CraftWorld, GroveError,
                   check, cstr, pystr)

N_ACTIONS = _lib.N_ACTIONS
OBS_SIZE = _lib.OBS_SIZE
N_KINDS = _lib.N_KINDS
ACTIONS = ("down", "up", "left", "right", "use")


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def make_config(**settings):
    """A craft_config with craft.md §3's defaults and `settings` applied by
    craft_config_set (keys width, height, n_each, max_steps, workshops,
    coarse_view, treasure, reward, primitives); values may be ints, bools
    or the strings craft_config_set takes. GroveError for a bad key, value
    or combination."""
    lib = _lib.load()
    c = CraftConfig()
    lib.craft_config_default(ctypes.byref(c))
    for key, value in settings.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "1" if value else "0"
        elif isinstance(value, (list, tuple)):
            value = ",".join(value)
        check(lib.craft_config_set(ctypes.byref(c), cstr(key),
                                   cstr(str(value))))
    check(lib.craft_config_validate(ctypes.byref(c)))
    return c


def config_dict(c):
    """A craft_config as a dict with craft.md §3's keys and value names."""
    lib = _lib.load()
    buf = ctypes.create_string_buffer(128)
    lib.craft_primitives_format(c.primitives, buf, len(buf))
    return {"width": c.width, "height": c.height,
            "primitives": pystr(buf.value), "n_each": c.n_each,
            "workshops": c.workshops,
            "treasure": pystr(lib.craft_treasure_name(c.treasure)),
            "coarse_view": c.coarse_view, "max_steps": c.max_steps,
            "reward": pystr(lib.craft_reward_name(c.reward))}


def parse_task(name):
    """craft_task_parse: "AC", "CAD", "make bed", ... -> CraftTask."""
    t = CraftTask()
    check(_lib.load().craft_task_parse(cstr(name), ctypes.byref(t)))
    return t


def subtask_names(task):
    """The subtask names of a CraftTask: ["get wood", "get iron"]."""
    lib = _lib.load()
    buf = ctypes.create_string_buffer(64)
    out = []
    for i in range(task.n):
        check(lib.craft_subtask_name(ctypes.byref(task.sub[i]), buf, len(buf)))
        out.append(pystr(buf.value))
    return out


def _task_list(tasks):
    if isinstance(tasks, str):
        tasks = [t.strip() for t in tasks.split(",")]
    tasks = list(tasks)
    if not tasks:
        raise ValueError("Craft: no tasks")
    return tasks


class World:
    """One Craft world (struct craft_world, a plain value): reset, step,
    observe, state bytes and hash, text; its fields as numpy views."""

    def __init__(self, config=None, task="AC", seed=0, **settings):
        self._lib = _lib.load()
        self._w = CraftWorld()
        if isinstance(task, str):
            task = parse_task(task)
        if config is None:
            base = make_config(**settings)
            config = CraftConfig()
            self._lib.craft_config_for_task(ctypes.byref(base),
                                            ctypes.byref(task),
                                            ctypes.byref(config))
        check(self._lib.craft_world_reset(ctypes.byref(self._w),
                                          ctypes.byref(config), seed,
                                          ctypes.byref(task)))

    @classmethod
    def from_struct(cls, w):
        """A World holding a copy of a CraftWorld."""
        self = cls.__new__(cls)
        self._lib = _lib.load()
        self._w = CraftWorld()
        ctypes.pointer(self._w)[0] = w
        return self

    @classmethod
    def from_state_bytes(cls, config, state):
        """craft_state_from_bytes: the world of a replay keyframe's state
        bytes under `config` (a CraftConfig, e.g. a replay's env_config)."""
        self = cls.__new__(cls)
        self._lib = _lib.load()
        self._w = CraftWorld()
        state = bytes(state)
        check(self._lib.craft_state_from_bytes(ctypes.byref(self._w),
                                               ctypes.byref(config), state,
                                               len(state)))
        return self

    def copy(self):
        return World.from_struct(self._w)

    def step(self, action):
        """One step; returns (reward, terminated, truncated, info) with
        info {"completed", "subtask"}. GroveError when the action is out of
        range or the episode is over."""
        st = CraftStep()
        check(self._lib.craft_world_step(ctypes.byref(self._w), int(action),
                                         ctypes.byref(st)))
        return (st.reward, bool(st.terminated), bool(st.truncated),
                {"completed": bool(st.completed), "subtask": st.subtask})

    def observe(self, out=None):
        """The 1075-float observation (written into `out` when given)."""
        if out is None:
            out = np.empty(OBS_SIZE, np.float32)
        if out.dtype != np.float32 or out.size != OBS_SIZE or \
                not out.flags.c_contiguous:
            raise ValueError("observe: out must be a contiguous float32 "
                             "array of %d elements" % OBS_SIZE)
        self._lib.craft_world_observe(ctypes.byref(self._w), _ptr(out))
        return out

    def expert_action(self):
        """The scripted expert's next action (envs/expert.h), or None when
        the target is unreachable or the episode is over."""
        a, s = ctypes.c_int(), ctypes.c_int()
        status = self._lib.craft_expert_act(ctypes.byref(self._w),
                                            ctypes.byref(a), ctypes.byref(s))
        return a.value if status == 0 else None

    def state_bytes(self):
        buf = ctypes.create_string_buffer(_lib.STATE_MAX_BYTES)
        n = check(self._lib.craft_state_bytes(ctypes.byref(self._w), buf,
                                              len(buf)))
        return buf.raw[:n]

    def state_hash(self):
        return self._lib.craft_state_hash(ctypes.byref(self._w))

    def render_text(self):
        buf = ctypes.create_string_buffer(_lib.TEXT_CAP)
        check(self._lib.craft_world_render_text(ctypes.byref(self._w), buf,
                                                len(buf)))
        return pystr(buf.value)

    __str__ = render_text

    @property
    def grid(self):
        """[width, height] uint8 kind indices, x-major (a copy)."""
        c = self._w.config
        g = np.frombuffer(self._w.grid, np.uint8, c.width * c.height)
        return g.reshape(c.width, c.height).copy()

    @property
    def inventory(self):
        return np.array(self._w.inventory, np.uint16)

    x = property(lambda self: self._w.x)
    y = property(lambda self: self._w.y)
    dir = property(lambda self: self._w.dir)
    k = property(lambda self: self._w.k)
    t = property(lambda self: self._w.t)
    seed = property(lambda self: self._w.seed)
    episode_return = property(lambda self: self._w.episode_return)
    task_name = property(lambda self: pystr(self._w.task.name))
    config = property(lambda self: config_dict(self._w.config))

    @property
    def done(self):
        return self._w.k >= self._w.task.n or \
            self._w.t >= self._w.config.max_steps


class Craft:
    """N Craft worlds stepped together by craft_batch_step (envs/craft.h).

    Craft(num_envs, tasks, seed, n_each=1, reward="dense", **settings):
    tasks is a list of task names (or one comma-separated string); world j
    runs tasks[j % len(tasks)]. settings are craft.md §3's other keys
    (width, height, max_steps, primitives, treasure, workshops,
    coarse_view). Tasks that need another world (OMPN "get gold", "get
    gem") adjust it as craft_config_for_task says; tasks that need
    different worlds cannot share one batch.
    """

    num_actions = N_ACTIONS
    obs_size = OBS_SIZE

    def __init__(self, num_envs, tasks, seed=0, n_each=1, reward="dense",
                 **settings):
        self._lib = lib = _lib.load()
        self.num_envs = int(num_envs)
        self.task_names = _task_list(tasks)
        self.seed = int(seed)
        base = make_config(n_each=n_each, reward=reward, **settings)
        n = len(self.task_names)
        self._tasks = (CraftTask * n)()
        config = None
        for i, name in enumerate(self.task_names):
            self._tasks[i] = parse_task(name)
            c = CraftConfig()
            lib.craft_config_for_task(ctypes.byref(base),
                                      ctypes.byref(self._tasks[i]),
                                      ctypes.byref(c))
            if config is not None and bytes(c) != bytes(config):
                raise GroveError(
                    "Craft: task '%s' needs another world than '%s' (%s); "
                    "run them in separate batches" % (
                        name, self.task_names[0], config_dict(c)))
            config = c
        self._config = config
        self.config = config_dict(config)
        N = self.num_envs
        self.obs = np.zeros((N, OBS_SIZE), np.float32)
        self.rewards = np.zeros(N, np.float32)
        self.terminated = np.zeros(N, np.bool_)
        self.truncated = np.zeros(N, np.bool_)
        self.episode_return = np.zeros(N, np.float32)
        self.episode_length = np.zeros(N, np.uint16)
        self._actions = np.zeros(N, np.uint8)
        self._out = CraftBatchOut(
            _ptr(self.obs).value, _ptr(self.rewards).value,
            _ptr(self.terminated).value, _ptr(self.truncated).value,
            _ptr(self.episode_return).value, _ptr(self.episode_length).value)
        self.log = CraftLog()
        self._batch = CraftBatch()
        self._live = False
        self.info = {"episode_return": self.episode_return,
                     "episode_length": self.episode_length}
        self._init(self.seed)

    def _init(self, seed):
        if self._live:
            self._lib.craft_batch_free(ctypes.byref(self._batch))
            self._live = False
        check(self._lib.craft_batch_init(
            ctypes.byref(self._batch), ctypes.byref(self._config),
            self._tasks, len(self.task_names), self.num_envs, seed,
            _ptr(self.obs)))
        self._live = True
        self.seed = seed
        # bound once: step() calls the C function with these objects
        self._step_args = (ctypes.byref(self._batch),
                           _ptr(self._actions), ctypes.byref(self._out),
                           ctypes.byref(self.log))
        self._step = self._lib.craft_batch_step

    def reset(self, seed=None, options=None):
        """Every world starts episode 0 again (of `seed`'s stream when
        given, else of the current seed's); the log is cleared. Returns
        (obs, info)."""
        self._init(self.seed if seed is None else int(seed))
        self.rewards[:] = 0
        self.terminated[:] = False
        self.truncated[:] = False
        self.episode_return[:] = 0
        self.episode_length[:] = 0
        ctypes.memset(ctypes.byref(self.log), 0, ctypes.sizeof(self.log))
        return self.obs, self.info

    def step(self, actions):
        """Steps every world with actions[N] (0..4; any integer array,
        converted to uint8 when it is not). Returns (obs, reward,
        terminated, truncated, info), the environment's own buffers."""
        a = actions
        if not (isinstance(a, np.ndarray) and a.dtype == np.uint8 and
                a.flags.c_contiguous):
            a = np.asarray(actions)
            if a.shape != (self.num_envs,):
                raise ValueError("Craft.step: actions of shape %s, want (%d,)"
                                 % (a.shape, self.num_envs))
            if a.dtype.kind not in "iub":
                raise ValueError("Craft.step: actions of dtype %s, want "
                                 "integers 0..4" % a.dtype)
            if a.size and (a.min() < 0 or a.max() >= N_ACTIONS):
                raise ValueError("Craft.step: an action is outside 0..4")
            a = a.astype(np.uint8)
        elif a.shape != (self.num_envs,):
            raise ValueError("Craft.step: actions of shape %s, want (%d,)"
                             % (a.shape, self.num_envs))
        if a is not self._actions:
            self._actions[:] = a
        check(self._step(*self._step_args))
        return (self.obs, self.rewards, self.terminated, self.truncated,
                self.info)

    @property
    def single_observation_space(self):
        """gymnasium's Box of one observation (needs gymnasium installed;
        grove itself does not use it)."""
        import gymnasium
        return gymnasium.spaces.Box(0.0, np.inf, (OBS_SIZE,), np.float32)

    @property
    def single_action_space(self):
        """gymnasium's Discrete(5) (needs gymnasium installed)."""
        import gymnasium
        return gymnasium.spaces.Discrete(N_ACTIONS)

    @property
    def actions(self):
        """The action buffer: write actions here and call step(env.actions)
        to skip every conversion (the fastest path)."""
        return self._actions

    def expert_actions(self, out=None):
        """The scripted expert's action for every world (envs/expert.h;
        USE where its target is unreachable), as uint8 [N]."""
        if out is None:
            out = np.empty(self.num_envs, np.uint8)
        self._lib.craft_expert_act_batch(ctypes.byref(self._batch), 0,
                                         self.num_envs, _ptr(out), None, None)
        return out

    def world(self, j):
        """A copy of world j as a World (craft_batch_get)."""
        if not 0 <= j < self.num_envs:
            raise IndexError("Craft.world: %d outside 0..%d" %
                             (j, self.num_envs - 1))
        w = CraftWorld()
        self._lib.craft_batch_get(ctypes.byref(self._batch), j,
                                  ctypes.byref(w))
        return World.from_struct(w)

    def render(self, j=0):
        """World j drawn as text (craft.md §11)."""
        return self.world(j).render_text()

    def close(self):
        if getattr(self, "_live", False):
            self._lib.craft_batch_free(ctypes.byref(self._batch))
            self._live = False

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
