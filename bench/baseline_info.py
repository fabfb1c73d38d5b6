"""What a PyTorch baseline of `grove bench ...` runs on, in one line.

Each baseline script (bench/kernels/bench_torch.py, bench/nlp/onlstm_ref.py,
bench/ocn/ocn_torch.py) prints

    baseline_blas <library> (<how it was found>); BLAS threads <n>; torch <version>, intra-op threads <n>, inter-op <n>

after importing torch, and the C side copies it into the benchmark's
header. The library is the one torch resolved at run time (Debian's torch
is built with BLAS_INFO=generic and reaches whatever libblas.so.3 the
alternatives system points to, OpenBLAS or the slow reference BLAS):
threadpoolctl's view when it is installed, else the BLAS-like shared
objects mapped into this process (/proc/self/maps), asked for their
version and thread count through ctypes where they export it (OpenBLAS,
MKL, BLIS), then the allocator setting below.

The allocator. With glibc's defaults a buffer over 32 MiB is mmap'd on
every allocation and unmapped when freed, so a PyTorch loop that allocates
and frees window-sized buffers at every time step (the reference ON-LSTM's
`xw[t]`: its backward materialises a zero tensor of the whole window per
step) pays page faults and kernel zero-filling per step. On this project's
2-core VM one ON-LSTM training step at B 256, T 64 took 33 s that way and
0.7 s with freed memory kept in the process; the OCN baseline, on the other
hand, runs 30 % slower with it kept (bench/kernels/README.md). So each
baseline uses the setting under which it was measured faster:
`keep_freed_memory()` (mmap and trim thresholds 1 GiB through `mallopt`),
called by bench_torch.py and onlstm_ref.py, or glibc's defaults.
GROVE_BENCH_BASELINE_MALLOC=default or =keep imposes one on every baseline.
The line printed names the one in effect, and GLIBC_TUNABLES when the
environment sets it (glibc.malloc.hugetlb=1 puts the heap on huge pages).
"""
import ctypes
import os
import re

MALLOC = "glibc defaults"


def keep_freed_memory():
    """Keep freed memory in the process (see the module's docstring)."""
    global MALLOC
    if os.environ.get("GROVE_BENCH_BASELINE_MALLOC", "") == "default":
        MALLOC = "glibc defaults (GROVE_BENCH_BASELINE_MALLOC=default)"
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        ok = (libc.mallopt(m_mmap_threshold, 1 << 30) == 1 and
              libc.mallopt(m_trim_threshold, 1 << 30) == 1)
    except (OSError, AttributeError):
        ok = False
    MALLOC = ("mmap and trim thresholds 1 GiB (mallopt)" if ok else
              "glibc defaults (mallopt unavailable)")


if os.environ.get("GROVE_BENCH_BASELINE_MALLOC", "") == "keep":
    keep_freed_memory()
elif os.environ.get("GROVE_BENCH_BASELINE_MALLOC", "") == "default":
    MALLOC = "glibc defaults (GROVE_BENCH_BASELINE_MALLOC=default)"


_NAMES = re.compile(r"lib(openblas|blas|cblas|mkl_rt|mkl_core|blis|flexiblas|"
                    r"armpl|accelerate)[^/]*\.so", re.I)


def _mapped():
    libs = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and _NAMES.search(os.path.basename(parts[-1])):
                    p = os.path.realpath(parts[-1])
                    if p not in libs:
                        libs.append(p)
    except OSError:
        pass
    return libs


def _ask(path):
    """(description, threads) from the library itself, where it can say."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None, None
    for cfg, nth in (("openblas_get_config", "openblas_get_num_threads"),
                     (None, "mkl_get_max_threads"),
                     (None, "bli_thread_get_num_threads")):
        try:
            threads = getattr(lib, nth)()
        except AttributeError:
            continue
        desc = None
        if cfg is not None:
            try:
                f = getattr(lib, cfg)
                f.restype = ctypes.c_char_p
                desc = f().decode("ascii", "replace").strip()
            except AttributeError:
                pass
        return desc, threads
    return None, None


def describe(torch):
    """The one-line description (without the leading key)."""
    # one product, so that a lazily loaded BLAS is mapped by now
    a = torch.ones(8, 8)
    (a @ a).sum().item()
    blas, how, threads = None, None, None
    try:
        import threadpoolctl
        for info in threadpoolctl.threadpool_info():
            if info.get("user_api") == "blas":
                blas = "%s (%s %s)" % (info.get("filepath"),
                                       info.get("internal_api"),
                                       info.get("version"))
                how = "threadpoolctl"
                threads = info.get("num_threads")
                break
    except Exception:  # not installed, or it failed: read the maps
        pass
    if blas is None:
        libs = _mapped()
        desc, main = None, None
        for p in libs:
            d, t = _ask(p)
            if t is not None:
                main, desc, threads = p, d, t
                break
        if main is not None:
            blas = "%s in %s" % (desc or "a BLAS", main)
        else:
            blas = "an unknown BLAS" if libs else "no BLAS library mapped"
        if libs:
            blas += "; mapped: " + ", ".join(libs)
        how = "/proc/self/maps"
    return ("%s (found through %s); BLAS threads %s; torch %s, intra-op "
            "threads %d, inter-op %d; malloc: %s" % (
                blas, how, "?" if threads is None else threads,
                torch.__version__, torch.get_num_threads(),
                torch.get_num_interop_threads(), _malloc()))


def _malloc():
    """MALLOC, with GLIBC_TUNABLES when the environment sets it (e.g.
    glibc.malloc.hugetlb=1, which changes what "glibc defaults" means)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if not tunables:
        return MALLOC
    if MALLOC.startswith("glibc defaults"):
        return "glibc with GLIBC_TUNABLES=%s%s" % (
            tunables, MALLOC[len("glibc defaults"):])
    return "%s; GLIBC_TUNABLES=%s" % (MALLOC, tunables)


def print_line(torch):
    print("baseline_blas " + describe(torch).replace("\n", " "), flush=True)
