#!/usr/bin/env bash
# Install llama-cpp-python, the version pinned in constraints.txt, as two builds that do not
# depend on the CPU that compiles them:
#   portable  the venv's llama_cpp package: any x86-64 CPU with AVX2/FMA/F16C;
#   avx512    beside it, in $VENV/share/quire/llama-cpp-avx512: AVX-512 (F/CD/VL/DQ/BW, VBMI,
#             VNNI) and no AMX. The model process runs it only on CPUs with those flags, and
#             only once it has generated a token there (agent/model_server/kernels.py).
#
# A native build (GGML_NATIVE=ON, pip's default) turns on every instruction set of the
# building CPU; on Xeons with AMX it crashes in libggml-cpu (SIGSEGV in decode), and pip's
# wheel cache would hand that binary to any later install. So the wheels are built here with
# pip's cache off, kept in a wheelhouse keyed by version and flags, and installed from there.
#
#   scripts/install-llama-cpp.sh VENV_PYTHON [CONSTRAINTS]
set -euo pipefail
PYTHON="$1"
CONSTRAINTS="${2:-constraints.txt}"
VERSION=$(sed -n 's/^llama[-_]cpp[-_]python==\([0-9.]*\).*/\1/Ip' "$CONSTRAINTS")
[ -n "$VERSION" ] || { echo "error: no llama-cpp-python==X pin in $CONSTRAINTS" >&2; exit 2; }
ROOT="${QUIRE_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/quire/wheels}"
COMMON="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF \
-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
-DGGML_AMX_BF16=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF"
PORTABLE="$COMMON -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF"
AVX512="$COMMON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON"

# wheel_for NAME FLAGS: print the folder holding the wheel built with FLAGS (building it once)
wheel_for() {
  local key house tmp
  key=$(printf '%s %s' "$VERSION" "$2" | sha256sum | cut -c1-12)
  house="$ROOT/llama-cpp-python-$VERSION-$1-$key"
  if ! compgen -G "$house/llama_cpp_python-$VERSION-*.whl" >/dev/null; then
    echo "building llama-cpp-python $VERSION ($1 build; 5-15 minutes, once)" >&2
    mkdir -p "$ROOT"
    tmp=$(mktemp -d "$ROOT/.build-XXXXXX")
    if ! CMAKE_ARGS="$2" FORCE_CMAKE=1 "$PYTHON" -m pip wheel --quiet --no-cache-dir --no-deps \
        --no-binary llama-cpp-python -w "$tmp" "llama-cpp-python==$VERSION" >&2; then
      rm -rf "$tmp"
      return 1
    fi
    rm -rf "$house" && mv "$tmp" "$house"
  fi
  echo "$house"
}

house=$(wheel_for portable "$PORTABLE")
"$PYTHON" -m pip install --quiet --no-deps --force-reinstall --no-index --find-links "$house" \
  "llama-cpp-python==$VERSION"

if [ "$(uname -m)" = "x86_64" ]; then
  target="$("$PYTHON" -c 'import sys; print(sys.prefix)')/share/quire/llama-cpp-avx512"
  if house=$(wheel_for avx512 "$AVX512"); then
    rm -rf "$target"
    "$PYTHON" -m pip install --quiet --no-deps --no-index --find-links "$house" \
      --target "$target" "llama-cpp-python==$VERSION"
  else
    echo "warning: the AVX-512 build failed; the portable build serves every CPU" >&2
  fi
fi
