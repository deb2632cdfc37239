#!/usr/bin/env bash
# Installs the Debian packages nanotrain needs (builds, tests, the PyTorch oracle) when missing.
# Every dependency is a Debian package; see the README for why each one is there.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git       # toolchain
  libgtest-dev                               # unit tests
  libcli11-dev nlohmann-json3-dev            # command line, JSON
  libdnnl-dev                                # oneDNN GEMMs
  libpcre2-dev libssl-dev                    # tokenizer regex, SHA-256
  libyaml-cpp-dev                            # core.yaml of CORE evaluation bundles
  libtomlplusplus-dev                        # sweep files in TOML
  openmpi-bin libopenmpi-dev                 # optional MPI: training over several processes (mpirun)
  python3 python3-torch python3-numpy        # the independent PyTorch reference (tests, comparisons)
  python3-yaml python3-jinja2                # the independent CORE reference (tests)
  libopenblas0-pthread                       # a real BLAS for PyTorch's fp32 GEMMs
)
# The tiktoken reference encoder (tests) runs on Node.js; some machines have a Node.js build that
# bundles npm, so these two are checked by command rather than by package.
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
