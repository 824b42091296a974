#!/usr/bin/env bash
# Download rigaudit's runtime dependencies as wheels for the benchmark machine (CPython 3.12,
# x86_64 Linux by default) into .whl/ (git-ignored), so benchmarks/device_story.sh can run
# rigaudit there without network. Carry ".whl" with the run.
#   usage: benchmarks/make_wheelhouse.sh [DEST] [PYTHON_VERSION] [PLATFORM_ARCH]
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-.whl}"
pyver="${2:-3.12}"
arch="${3:-x86_64}"
pip="${PIP:-python3 -m pip}"
mkdir -p "$dest"
$pip download --quiet --dest "$dest" --only-binary=:all: --implementation cp --python-version "$pyver" \
  --platform "manylinux2014_$arch" --platform "manylinux_2_17_$arch" --platform "manylinux_2_28_$arch" \
  --platform "manylinux_2_34_$arch" \
  "pydantic>=2.6,<3" "anyio>=4.3" "rich>=13.7" "openai>=1.40" "nvidia-ml-py>=12.535"
du -sh "$dest"
ls "$dest"
