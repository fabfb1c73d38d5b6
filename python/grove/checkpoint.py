"""Checkpoints (kernels/checkpoint.h) as named numpy arrays, read with
python3-msgpack; every check of the C loader that concerns the file itself
is made here too (format, version, config CRC-32, each tensor's dtype,
shape, length and CRC-32), with errors naming the file and the tensor.

    ck = grove.read_checkpoint("runs/s1/best.ckpt")
    ck.config            # the model's config text ("kind ocn\\noptions 3...")
    ck.config_lines()    # {"kind": "ocn", "options": "3", ...}
    ck["opt.l1.wx"]      # numpy float32 [1075, 384]
    ck.kinds["opt.l1.wx"]  # "param" | "buffer" | "optim"
"""

import zlib

import msgpack
import numpy as np

from ._lib import GroveError

FORMAT = "grove-checkpoint"
VERSION = 1
_DTYPES = {"f32": np.dtype("<f4"), "i32": np.dtype("<i4")}
_KINDS = ("param", "buffer", "optim")


class Checkpoint:
    """A checkpoint's config text and tensors (name -> numpy array)."""

    def __init__(self, path, config, tensors, kinds):
        self.path = path
        self.config = config
        self.tensors = tensors
        self.kinds = kinds

    def __getitem__(self, name):
        return self.tensors[name]

    def __contains__(self, name):
        return name in self.tensors

    def __iter__(self):
        return iter(self.tensors)

    def params(self):
        """The tensors of kind "param" (the model's weights)."""
        return {n: t for n, t in self.tensors.items()
                if self.kinds[n] == "param"}

    def config_lines(self):
        """The config text as {key: rest of the line} (grove's configs are
        "key value" lines; a key seen twice keeps its last value)."""
        out = {}
        for line in self.config.splitlines():
            key, _, value = line.strip().partition(" ")
            if key:
                out[key] = value.strip()
        return out


def read_checkpoint(path, kinds=_KINDS):
    """Reads `path` (tensors of the kinds named in `kinds`). GroveError for
    a file that is not a grove checkpoint or fails a check."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise GroveError("%s: cannot read: %s" % (path, e.strerror)) from None
    try:
        top = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except msgpack.ExtraData:
        raise GroveError("%s: bytes after the checkpoint's map" % path) \
            from None
    except (ValueError, msgpack.UnpackException) as e:
        raise GroveError("%s: not a grove checkpoint (MessagePack: %s)"
                         % (path, e)) from None
    if not isinstance(top, dict) or top.get("format") != FORMAT:
        raise GroveError("%s: not a grove checkpoint (no \"format\": \"%s\")"
                         % (path, FORMAT))
    if top.get("version") != VERSION:
        raise GroveError("%s: checkpoint version %r, this reader knows %d"
                         % (path, top.get("version"), VERSION))
    config = top.get("config")
    if isinstance(config, bytes):
        # bin: the text holds bytes that are not UTF-8 (a path); they come
        # back as surrogates, as os.fsdecode gives them
        config = config.decode("utf-8", "surrogateescape")
    if not isinstance(config, str):
        raise GroveError("%s: \"config\" is missing or not a string" % path)
    crc = zlib.crc32(config.encode("utf-8", "surrogateescape"))
    if top.get("config_crc32") != crc:
        raise GroveError("%s: config CRC mismatch (stored %r, computed 0x%08x)"
                         % (path, top.get("config_crc32"), crc))
    raw = top.get("tensors")
    if not isinstance(raw, dict):
        raise GroveError("%s: \"tensors\" is missing or not a map" % path)
    tensors, tkinds = {}, {}
    for name, t in raw.items():
        where = "%s: tensor '%s'" % (path, name)
        if not isinstance(t, dict):
            raise GroveError("%s: not a map" % where)
        kind, dtype, shape = t.get("kind"), t.get("dtype"), t.get("shape")
        body, tcrc = t.get("data"), t.get("crc32")
        if kind not in _KINDS:
            raise GroveError("%s: kind %r, expected param, buffer or optim"
                             % (where, kind))
        if kind not in kinds:
            continue
        if dtype not in _DTYPES:
            raise GroveError("%s: dtype %r, expected f32 or i32"
                             % (where, dtype))
        if not isinstance(shape, list) or not 0 <= len(shape) <= 4 or \
                not all(isinstance(d, int) and d >= 0 for d in shape):
            raise GroveError("%s: shape %r is not 0 to 4 sizes"
                             % (where, shape))
        if not isinstance(body, bytes):
            raise GroveError("%s: \"data\" is missing or not bin" % where)
        numel = int(np.prod(shape, dtype=np.int64))
        if len(body) != numel * 4:
            raise GroveError("%s: %d data bytes, shape %s needs %d"
                             % (where, len(body), shape, numel * 4))
        computed = zlib.crc32(body)
        if tcrc != computed:
            raise GroveError("%s: CRC mismatch (stored %r, computed 0x%08x)"
                             % (where, tcrc, computed))
        a = np.frombuffer(body, _DTYPES[dtype]).reshape(shape)
        tensors[name] = a.astype(a.dtype.newbyteorder("="))
        tkinds[name] = kind
    return Checkpoint(path, config, tensors, tkinds)
