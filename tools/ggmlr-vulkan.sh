#!/usr/bin/env bash
# `make vulkan`: GGML with its Vulkan backend, in an R library of its own,
# with Rgguf and Rllm built against it.
#
#   tools/ggmlr-vulkan.sh VKLIB BASELIB [auto|avx512|avx2|portable]
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
# 4. A lavapipe that GGML's Vulkan backend accepts, for `make test-vulkan`
#    where there is no GPU: ggmlR's backend refuses devices with fewer than
#    256 bytes of push constants, and the lavapipe of Debian 12's Mesa
#    (22.3.6) offers 128 (measured: "requires maxPushConstantsSize >= 256
#    bytes (got 128)"). Mesa 25's offers 256 (measured with 25.0.7 from
#    bookworm-backports). When the system's Mesa is older than 25, apt-get
#    downloads (does not install) mesa-vulkan-drivers and the libdrm it
#    needs from the release's backports suite, through a private package
#    list (the machine's sources and packages are left as they are), and
#    unpacks them under VKLIB/../lavapipe; its env file (read by the
#    Makefile) points the Vulkan loader at that driver alone, and runs it on
#    one thread (LP_NUM_THREADS=1): with its default of one worker thread
#    per core, GGML's matrix products of more than 64 columns come out
#    wrong in some runs (measured on 2 cores: 3 of 120 single products,
#    2 of 6 model evaluations of 100 tokens; with one thread 0 of 60 and
#    0 of 6; docs/notes/issue-17-vulkan.md).
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
vklib=${1:?usage: ggmlr-vulkan.sh VKLIB BASELIB [auto|avx512|avx2|portable]}
base=${2:?usage: ggmlr-vulkan.sh VKLIB BASELIB [auto|avx512|avx2|portable]}
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

# 4. lavapipe for make test-vulkan
lvp=$(dirname "$vklib")/lavapipe
mkdir -p "$lvp"
sysver=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || echo 0)
if dpkg --compare-versions "$sysver" ge 25.0; then
  icd=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -1)
  echo "VK_ICD_FILENAMES=$icd LP_NUM_THREADS=1" >"$lvp/env"
  echo "vulkan: lavapipe of the system's Mesa $sysver ($icd)"
elif [ ! -f "$lvp/env" ] || ! grep -q "$lvp" "$lvp/env"; then
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || { echo "vulkan: cannot tell the Debian release (/etc/os-release)" >&2; exit 1; }
  echo "vulkan: the system's Mesa $sysver has a lavapipe GGML refuses; fetching mesa-vulkan-drivers from $codename-backports into $lvp"
  apt=$lvp/apt
  rm -rf "$apt" "$lvp/root" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$lvp/debs"
  echo "deb http://deb.debian.org/debian $codename-backports main" >"$apt/sources.list"
  opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache")
  apt-get "${opts[@]}" update -qq
  ver=$(apt-cache "${opts[@]}" policy mesa-vulkan-drivers | awk '/Candidate:/ {print $2}')
  dpkg --compare-versions "$ver" ge 25.0 ||
    { echo "vulkan: $codename-backports has mesa-vulkan-drivers $ver, older than 25.0" >&2; exit 1; }
  (cd "$lvp/debs" && rm -f ./*.deb && apt-get "${opts[@]}" download "mesa-vulkan-drivers=$ver" libdrm2 libdrm-amdgpu1 2>/dev/null)
  for d in "$lvp"/debs/*.deb; do dpkg-deb -x "$d" "$lvp/root"; done
  so=$lvp/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
  [ -f "$so" ] || so=$(find "$lvp/root" -name libvulkan_lvp.so | head -1)
  [ -f "$so" ] || { echo "vulkan: no libvulkan_lvp.so in mesa-vulkan-drivers $ver" >&2; exit 1; }
  printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' "$so" >"$lvp/lvp_icd.json"
  echo "VK_ICD_FILENAMES=$lvp/lvp_icd.json LD_LIBRARY_PATH=$(dirname "$so") LP_NUM_THREADS=1" >"$lvp/env"
  echo "vulkan: lavapipe of Mesa $ver in $lvp"
fi
