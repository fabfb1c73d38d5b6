# Sourced by the scripts that run on a lent GPU machine (device_check.sh,
# train_runs.sh), from the repository root there: unpacks the carried
# libraries, finds cuBLAS 13, names the carried CUDA backend and writes a
# python3 wrapper for the PyTorch baselines. Sets root, bin, py.
root=$PWD
# The build records absolute paths of this checkout (fixtures, the
# benchmark scripts): make them resolve there.
if [ "$root" != /work/main ] && [ ! -e /work/main ]; then
    mkdir -p /work && ln -s "$root" /work/main
fi
bin=.devbin
libs=/tmp/grove-devlibs
mkdir -p "$libs"
tar -C "$libs" -xJf .devpack/libs.tar.xz 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        .devpack/libs.tar.xz "$libs"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/libcublas.so.13" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
if ldd $bin/grove | grep -q "libcublas.*not found"; then
    # the PyTorch wheels' copy of cuBLAS 13
    d=$(find /usr/local /opt /usr/lib -name 'libcublas.so.13' -printf '%h\n' \
        2>/dev/null | head -1)
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
fi
export LD_LIBRARY_PATH
# PyTorch's baseline runs under the image's own libraries, not the carried
py=/tmp/grove-python3
printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec python3 "$@"\n' >"$py"
chmod +x "$py"
# grove loads its CUDA backend from here (the build folder's path is not
# this machine's)
export GROVE_CUDA_LIB=$root/$bin/libgrove_cuda.so
