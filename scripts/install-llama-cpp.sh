#!/usr/bin/env bash
# Install llama-cpp-python as a portable build: the version pinned in constraints.txt,
# compiled for any x86-64 CPU with AVX2/FMA/F16C, never for the CPU that builds it.
#
# A native build (GGML_NATIVE=ON, pip's default) turns on every instruction set of the
# building CPU; on Xeons with AMX it crashes in libggml-cpu (SIGSEGV in decode), and pip's
# wheel cache would hand that binary to any later install. So the wheel is built here with
# pip's cache off, kept in a wheelhouse keyed by version and flags, and installed from there.
#
#   scripts/install-llama-cpp.sh VENV_PYTHON [CONSTRAINTS]
set -euo pipefail
PYTHON="$1"
CONSTRAINTS="${2:-constraints.txt}"
VERSION=$(sed -n 's/^llama[-_]cpp[-_]python==\([0-9.]*\).*/\1/Ip' "$CONSTRAINTS")
[ -n "$VERSION" ] || { echo "error: no llama-cpp-python==X pin in $CONSTRAINTS" >&2; exit 2; }
FLAGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF \
-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF \
-DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF"
KEY=$(printf '%s %s' "$VERSION" "$FLAGS" | sha256sum | cut -c1-12)
ROOT="${QUIRE_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/quire/wheels}"
HOUSE="$ROOT/llama-cpp-python-$VERSION-portable-$KEY"
if ! compgen -G "$HOUSE/llama_cpp_python-$VERSION-*.whl" >/dev/null; then
  echo "building llama-cpp-python $VERSION for any x86-64 CPU with AVX2 (5-15 minutes, once)"
  mkdir -p "$ROOT"
  TMP=$(mktemp -d "$ROOT/.build-XXXXXX")
  trap 'rm -rf "$TMP"' EXIT
  CMAKE_ARGS="$FLAGS" FORCE_CMAKE=1 "$PYTHON" -m pip wheel --quiet --no-cache-dir --no-deps \
    --no-binary llama-cpp-python -w "$TMP" "llama-cpp-python==$VERSION"
  rm -rf "$HOUSE" && mv "$TMP" "$HOUSE"
  trap - EXIT
fi
"$PYTHON" -m pip install --quiet --no-deps --force-reinstall --no-index --find-links "$HOUSE" \
  "llama-cpp-python==$VERSION"
