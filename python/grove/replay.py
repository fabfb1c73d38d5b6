"""Replays (replays/replay.h, spec/replay.md) read through the C reader.

    with grove.Replay("demos.replay") as r:
        print(r.header["agent"]["kind"], r.header["env_config"])
        for ep in r.episodes(observations=True):
            ep["actions"], ep["obs"], ep["return"]

The C reader checks everything as it streams (magic, version, keys and
types, order, keyframe hashes, episode ends, footer, CRC-32) and, with
verify=True (the default), re-simulates every episode from (env_config,
seed, task) and the recorded actions, comparing every keyframe hash,
reward, flag and subtask index: a damaged or forged file raises GroveError
with the C reader's message (file, object, byte offset). The observations
of episodes(observations=True) are the re-simulated worlds' (the state
each action was chosen in), written by craft_world_observe.
"""

import ctypes
import os

import numpy as np

from . import _lib
from ._lib import (GroveError, ReplayReaderStatus, ReplayRecord, check, cstr,
                   pystr)
from .craft import OBS_SIZE, World, config_dict, subtask_names

_TYPE_NAMES = {_lib.REC_HEADER: "header",
               _lib.REC_EPISODE_START: "episode start",
               _lib.REC_KEYFRAME: "keyframe", _lib.REC_STEP: "step",
               _lib.REC_EPISODE_END: "episode end",
               _lib.REC_FOOTER: "footer"}


def _header_dict(h):
    return {"version": h.version, "env": pystr(h.env),
            "env_config": config_dict(h.env_config),
            "recipes": pystr(h.recipes),
            "agent": {"kind": pystr(h.agent_kind),
                      "checkpoint": os.fsdecode(h.agent_checkpoint),
                      "n_options": h.agent_n_options},
            "created": pystr(h.created), "grove": pystr(h.grove),
            "keyframe_every": h.keyframe_every}


class Replay:
    """A replay file opened with the C streaming reader.

    verify: re-simulate every episode (REPLAY_READ_VERIFY; needed for
    observations). recover: a truncated file (a killed recording) ends
    after its last complete episode instead of failing. A Replay reads the
    file once, front to back: records() and episodes() share one stream.
    """

    def __init__(self, path, verify=True, recover=False):
        self._lib = lib = _lib.load()
        self.path = str(path)
        self.verify = verify
        flags = (_lib.REPLAY_READ_VERIFY if verify else 0) | \
            (_lib.REPLAY_READ_RECOVER if recover else 0)
        self._r = ctypes.c_void_p()
        check(lib.replay_reader_open(ctypes.byref(self._r), cstr(self.path),
                                     flags))
        h = lib.replay_reader_header(self._r).contents
        self._config = _lib.CraftConfig()
        ctypes.pointer(self._config)[0] = h.env_config
        self.header = _header_dict(h)
        self.footer = None
        self._rec = ReplayRecord()

    def close(self):
        if self._r:
            self._lib.replay_reader_close(self._r)
            self._r = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _next(self):
        if not self._r:
            raise GroveError("%s: the replay is closed" % self.path)
        rc = check(self._lib.replay_reader_next(self._r,
                                                ctypes.byref(self._rec)))
        return self._rec if rc > 0 else None

    def records(self):
        """Every record of the stream as a dict ("type": "header", "episode
        start", "keyframe", "step", "episode end", "footer"; "offset" and
        "size" in bytes; the record's fields with the spec's names)."""
        while True:
            rec = self._next()
            if rec is None:
                return
            yield self._record_dict(rec)

    def _record_dict(self, rec):
        d = {"type": _TYPE_NAMES.get(rec.type, str(rec.type)),
             "offset": rec.offset, "size": rec.size}
        if rec.type == _lib.REC_HEADER:
            d.update(self.header)
        elif rec.type == _lib.REC_EPISODE_START:
            s = rec.start
            d.update(episode=s.episode, seed=s.seed,
                     task=subtask_names(s.task), task_name=pystr(s.task.name))
        elif rec.type == _lib.REC_KEYFRAME:
            k = rec.keyframe
            d.update(episode=k.episode, t=k.t, hash=k.hash,
                     state=ctypes.string_at(k.state, k.state_len))
        elif rec.type == _lib.REC_STEP:
            s = rec.step
            d.update(episode=s.episode, t=s.t, a=s.a, r=s.r, d=bool(s.d),
                     tr=bool(s.tr), s=s.s)
            if s.has_o:
                d["o"] = s.o
            if s.n_po:
                d["po"] = np.ctypeslib.as_array(s.po, (s.n_po,)).copy()
            if s.has_pe:
                d["pe"] = s.pe
        elif rec.type == _lib.REC_EPISODE_END:
            e = rec.end
            d.update(end=e.episode, episode_return=e.episode_return,
                     length=e.length, success=bool(e.success))
        elif rec.type == _lib.REC_FOOTER:
            f = rec.footer
            d.update(episodes=f.episodes, steps=f.steps, crc32=f.crc32,
                     index=[(f.index[i].episode, f.index[i].t,
                             f.index[i].offset) for i in range(f.n_index)])
            self.footer = dict(d)
        return d

    def episodes(self, observations=False):
        """Each episode as a dict of arrays:
        episode, seed, task (subtask names), task_name, offset (of its
        start); actions uint8 [T], rewards float32 [T], done bool [T],
        truncated bool [T] (the step flags d and tr), subtask uint32 [T]
        (k before the action); option int32 [T] (-1 where absent), po
        float32 [T, K] and pe float32 [T] (NaN where absent) when the agent
        recorded them; keyframes: a list of {t, state (bytes), hash};
        return, length, success from the episode end; with observations,
        obs float32 [T, 1075]: the observation each action was taken on."""
        if observations and not self.verify:
            raise GroveError("%s: observations need verify=True (the C "
                             "reader re-simulates the episode)" % self.path)
        lib = self._lib
        ep = None
        while True:
            rec = self._next()
            if rec is None:
                return
            if rec.type == _lib.REC_EPISODE_START:
                s = rec.start
                ep = {"episode": s.episode, "seed": s.seed,
                      "task": subtask_names(s.task),
                      "task_name": pystr(s.task.name),
                      "offset": rec.offset, "keyframes": []}
                cols = {"actions": [], "rewards": [], "done": [],
                        "truncated": [], "subtask": [], "option": [],
                        "pe": [], "po": []}
                has_opt = False
                obs = []
            elif rec.type == _lib.REC_KEYFRAME:
                k = rec.keyframe
                ep["keyframes"].append(
                    {"t": k.t, "hash": k.hash,
                     "state": ctypes.string_at(k.state, k.state_len)})
            elif rec.type == _lib.REC_STEP:
                s = rec.step
                cols["actions"].append(s.a)
                cols["rewards"].append(s.r)
                cols["done"].append(s.d)
                cols["truncated"].append(s.tr)
                cols["subtask"].append(s.s)
                cols["option"].append(s.o if s.has_o else -1)
                cols["pe"].append(s.pe if s.has_pe else np.nan)
                cols["po"].append(
                    np.ctypeslib.as_array(s.po, (s.n_po,)).copy()
                    if s.n_po else None)
                has_opt = has_opt or s.has_o or s.has_pe or s.n_po > 0
                if observations:
                    o = np.empty(OBS_SIZE, np.float32)
                    w = lib.replay_reader_world_before(self._r)
                    if not w:
                        raise GroveError("%s: no re-simulated world at "
                                         "byte %d" % (self.path, rec.offset))
                    lib.craft_world_observe(w, o.ctypes.data_as(
                        ctypes.c_void_p))
                    obs.append(o)
            elif rec.type == _lib.REC_EPISODE_END:
                e = rec.end
                ep["actions"] = np.array(cols["actions"], np.uint8)
                ep["rewards"] = np.array(cols["rewards"], np.float32)
                ep["done"] = np.array(cols["done"], np.bool_)
                ep["truncated"] = np.array(cols["truncated"], np.bool_)
                ep["subtask"] = np.array(cols["subtask"], np.uint32)
                if has_opt:
                    ep["option"] = np.array(cols["option"], np.int32)
                    ep["pe"] = np.array(cols["pe"], np.float32)
                    K = max((len(p) for p in cols["po"] if p is not None),
                            default=0)
                    po = np.full((len(cols["po"]), K), np.nan, np.float32)
                    for i, p in enumerate(cols["po"]):
                        if p is not None:
                            po[i, :len(p)] = p
                    ep["po"] = po
                if observations:
                    ep["obs"] = (np.stack(obs) if obs else
                                 np.zeros((0, OBS_SIZE), np.float32))
                ep["return"] = e.episode_return
                ep["length"] = e.length
                ep["success"] = bool(e.success)
                yield ep
                ep = None
            elif rec.type == _lib.REC_FOOTER:
                self._record_dict(rec)

    def keyframe_world(self, keyframe):
        """The World of a keyframe (a dict of episodes()' "keyframes" or a
        keyframe record), rebuilt from its state bytes by
        craft_state_from_bytes under the header's env_config; its
        state_hash() equals the keyframe's hash."""
        return World.from_state_bytes(self._config, keyframe["state"])

    def status(self):
        """replay_reader_status as a dict (bytes and records read so far,
        complete, crc_ok, truncated, truncated_at)."""
        st = ReplayReaderStatus()
        self._lib.replay_reader_status(self._r, ctypes.byref(st))
        return {name: getattr(st, name) for name, _ in st._fields_}


def read_replay(path, observations=False, recover=False):
    """(header, [episode dicts]) of a whole replay, verified by
    re-simulation (see Replay.episodes)."""
    with Replay(path, verify=True, recover=recover) as r:
        eps = list(r.episodes(observations=observations))
        return r.header, eps


def verify_replay(path):
    """replay_verify_file: re-simulates every episode and checks every
    keyframe hash, the CRC, footer and trailer. Returns a dict of counts;
    GroveError naming the episode, step and byte offset otherwise."""
    lib = _lib.load()
    res = _lib.ReplayVerifyResult()
    check(lib.replay_verify_file(cstr(str(path)), ctypes.byref(res)))
    return {name: getattr(res, name) for name, _ in res._fields_}
