#!/usr/bin/env bash
# `make vulkan`: GGML with its Vulkan backend, in an R library of its own,
# with Rgguf and Rllm built against it.
#
#   tools/ggmlr-vulkan.sh VKLIB BASELIB [auto|avx2|portable]
#
# 1. Debian packages: libvulkan-dev (headers, loader), glslc (GGML's shader
#    compiler), mesa-vulkan-drivers (lavapipe, Mesa's Vulkan driver on the
#    CPU, which `make test-vulkan` runs on where there is no GPU); installed
#    with apt-get when missing.
# 2. ggmlR rebuilt --with-vulkan by tools/ggmlr-setup.sh (GGMLR_VULKAN=1),
#    from the tarball BASELIB's ggmlR was built from, with the same SIMD and
#    repack flags, into VKLIB; the script's probe checks libggml.a (the
#    SIMD code, the repack buffer, and ggml_backend_vk_reg defined).
# 3. Rgguf and Rllm installed into VKLIB; their configure finds the Vulkan
#    build first in R_LIBS (VKLIB, then BASELIB for every other package) and
#    links the Vulkan loader. Checked: Rllm in VKLIB reports a Vulkan build.
#
# Why a library of its own (build/vulkan/rlib) rather than the project's
# (build/rlib): a libggml.a with Vulkan makes every program that links it
# (Rgguf, the core's tests under ASan and valgrind) depend on the Vulkan
# loader and on a Vulkan instance being created when GGML's registry starts,
# which `make test` must not need. The project's library keeps the CPU build
# (tools/ggmlr-setup.sh now builds it --without-vulkan explicitly, since
# ggmlR's configure would otherwise enable Vulkan as soon as step 1 put the
# headers and glslc on the machine); the Vulkan library shadows ggmlR, Rgguf
# and Rllm only for the runs that put it first in R_LIBS.
set -euo pipefail
vklib=${1:?usage: ggmlr-vulkan.sh VKLIB BASELIB [auto|avx2|portable]}
base=${2:?usage: ggmlr-vulkan.sh VKLIB BASELIB [auto|avx2|portable]}
isa=${3:-auto}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$vklib"
vklib=$(cd "$vklib" && pwd)
base=$(cd "$base" && pwd)

need=()
for p in libvulkan-dev glslc mesa-vulkan-drivers; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "vulkan: installing ${need[*]} (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

tarball=$(tr -d ' \n' <"$base/.ggmlr/tarball" 2>/dev/null || true)
[ -f "$tarball" ] || tarball=""
GGMLR_VULKAN=1 R_LIBS_EXTRA=$base GGMLR_TARBALL=$tarball JOBS=${JOBS:-1} \
  bash "$root/tools/ggmlr-setup.sh" "$vklib" "$isa"

for p in Rgguf Rllm; do
  log=$vklib/.ggmlr/install-$p.log
  if ! R_LIBS=$vklib:$base R CMD INSTALL --preclean --no-test-load -l "$vklib" "$root/packages/$p" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "vulkan: R CMD INSTALL of packages/$p failed (log: $log)" >&2
    exit 1
  fi
  echo "vulkan: installed packages/$p into $vklib"
done
grep -q 'with GGML.s Vulkan backend' "$vklib/.ggmlr/install-Rgguf.log" ||
  { echo "vulkan: Rgguf's configure did not find the Vulkan backend (log: $vklib/.ggmlr/install-Rgguf.log)" >&2; exit 1; }
built=$(R_LIBS=$vklib:$base Rscript -e 'cat(isTRUE(attr(Rllm::rllm_vulkan_info(), "vulkan_build")))')
[ "$built" = TRUE ] || { echo "vulkan: Rllm in $vklib does not report a Vulkan build" >&2; exit 1; }
echo "vulkan: Rllm in $vklib runs GGML with Vulkan; its devices:"
R_LIBS=$vklib:$base Rscript -e 'print(Rllm::rllm_vulkan_info())'
