#!/usr/bin/env bash
# Install GGML (the CRAN package ggmlR: static libggml.a + headers) into the
# project's own R library, built for this CPU, and verify what was built.
#
#   tools/ggmlr-setup.sh LIB [auto|avx512|avx2|portable]
#
# auto: the best of these the CPU runs. avx2: the SIMD build (ggmlR's
# configure --with-simd: -mavx2 -mfma -mf16c), for a CPU with AVX2, FMA and
# F16C. avx512: that build plus AVX-512 (-mavx512f/cd/vl/dq/bw, the set of
# llama.cpp's skylakex CPU variant, and -mavx512vnni/-mavx512vbmi where the
# CPU has them, as its icelake variant), for a CPU with AVX-512 F, CD, VL, DQ
# and BW: ggmlR's configure stops at AVX2, so these flags come through the
# Makevars below; GGML's sources have AVX-512 paths (F16/F32 vectors, the
# quantized dot products' VNNI sums, the repacked Q4_0/Q4_K products) that
# llama.cpp's own CPU variants compile. A forced level the CPU lacks is an
# error. The result is checked, never trusted: ggml_cpu_has_avx2() and
# ggml_cpu_has_avx512() of the installed package (GGML's compile-time
# flags) and the AVX instructions (ymm and zmm registers) that objdump finds
# in lib/libggml.a, the archive Rgguf and Rllm link, must all match the build
# asked for; else this script fails. A
# ggmlR already in LIB that passes the check is kept; one that fails it is
# rebuilt. Every build defines GGML_USE_CPU_REPACK (through a Makevars file
# given as R_MAKEVARS_USER; ggmlR's own Makevars leaves it out), which
# registers GGML's repack buffer: its interleaved Q4_0/Q4_K/IQ4_NL kernels,
# which llama.cpp uses by default (Rllm's repack = TRUE), and compiles at
# -O3 (makevars() below says why); the check finds the reference to that
# buffer in libggml.a, and a build whose recorded Makevars differ is redone. The verified build is recorded in LIB/.ggmlr/isa. Installs elsewhere (the site library) are never used: LIB comes
# first in R_LIBS for every build and test (Makefile).
#
#
# GGML's Vulkan backend: ggmlR's configure enables it by itself when it
# finds the Vulkan headers and glslc (which `make vulkan` installs), and a
# libggml.a with it needs the Vulkan loader at link time. So every build
# here says which it wants: --without-vulkan, unless GGMLR_VULKAN=1 (tools/
# ggmlr-vulkan.sh: --with-vulkan, into a library of its own), and the probe
# checks it (ggml_backend_vk_reg defined in libggml.a or not); the verified
# answer is recorded in LIB/.ggmlr/vulkan ("yes" or "no").
# Other environment: R_LIBS_EXTRA, libraries after LIB for ggmlR's own
# dependencies (the Vulkan library borrows the project's); GGMLR_TARBALL, a
# ggmlR source tarball to build instead of CRAN's current one (the Vulkan
# build takes the one the project's library was built from).
#
# Why not install.packages("ggmlR", configure.args = "--with-simd"): R
# 4.2's install.packages() applies unnamed configure.args only when it
# installs exactly one package (its local function getConfigureArgs checks
# length(pkgs) == 1L). On a fresh machine ggmlR's dependency generics is
# installed in the same call, so the flag was dropped without a word and the
# build had no SIMD. Here dependencies are installed first, then ggmlR alone
# with R CMD INSTALL --configure-args.
set -euo pipefail
lib=${1:?usage: ggmlr-setup.sh LIB [auto|avx512|avx2|portable]}
want=${2:-auto}

cpu=$(dirname "$0")/cpu.sh
cpu_simd=0 cpu_512=0
bash "$cpu" has avx2 fma f16c && cpu_simd=1
[ $cpu_simd = 1 ] && bash "$cpu" has avx512f avx512cd avx512vl avx512dq avx512bw && cpu_512=1
case $want in
  auto) if [ $cpu_512 = 1 ]; then want=avx512; elif [ $cpu_simd = 1 ]; then want=avx2; else want=portable; fi ;;
  avx512) [ $cpu_512 = 1 ] || { echo "ggmlr-setup: an avx512 GGML was asked for, but this CPU lacks AVX-512 F, CD, VL, DQ or BW (or AVX2, FMA, F16C)" >&2; exit 1; } ;;
  avx2) [ $cpu_simd = 1 ] || { echo "ggmlr-setup: an avx2 GGML was asked for, but this CPU lacks AVX2, FMA or F16C" >&2; exit 1; } ;;
  portable) ;;
  *) echo "ggmlr-setup: unknown build '$want' (auto, avx512, avx2 or portable)" >&2; exit 1 ;;
esac
mkdir -p "$lib"
lib=$(cd "$lib" && pwd)
vulkan=no
[ "${GGMLR_VULKAN:-0}" = 1 ] && vulkan=yes
rlibs=$lib${R_LIBS_EXTRA:+:$R_LIBS_EXTRA}

# Prints "avx512", "avx2" or "portable" for the ggmlR in $lib, or why it is
# none; returns 0 only when the build is consistent (flags and code agree).
probe() {
  local dir=$lib/ggmlR a flag n z
  a=$dir/lib/libggml.a
  [ -f "$a" ] || { echo "no ggmlR with lib/libggml.a in $lib"; return 1; }
  flag=$(R_LIBS=$rlibs Rscript -e 'cat(as.integer(ggmlR::ggml_cpu_has_avx2()), as.integer(ggmlR::ggml_cpu_has_avx512()))' 2>/dev/null) ||
    { echo "ggmlR in $lib does not load"; return 1; }
  local dis
  dis=$(objdump -d --no-show-raw-insn "$a" 2>/dev/null) && [ -n "$dis" ] ||
    { echo "objdump cannot read $a"; return 1; }
  grep -q ' T ggml_mul_mat$' <<<"$(nm "$a" 2>/dev/null)" || { echo "$a does not define ggml_mul_mat"; return 1; }
  grep -q ' U ggml_backend_cpu_repack_buffer_type' <<<"$(nm "$a" 2>/dev/null | c++filt)" ||
    { echo "without GGML's repack buffer (built without GGML_USE_CPU_REPACK)"; return 1; }
  local vk=no
  grep -q ' T ggml_backend_vk_reg$' <<<"$(nm "$a" 2>/dev/null)" && vk=yes
  [ "$vk" = "$vulkan" ] || { echo "Vulkan backend in libggml.a: $vk, asked for: $vulkan"; return 1; }
  n=$(grep -c ymm <<<"$dis" || true)
  z=$(grep -c zmm <<<"$dis" || true)
  case "$flag" in
    "1 1") if [ "$n" -ge 1000 ] && [ "$z" -ge 1000 ]; then echo "avx512 ($z AVX-512 instructions on zmm, $n on ymm in libggml.a)"; return 0; fi ;;
    "1 0") if [ "$n" -ge 1000 ] && [ "$z" -eq 0 ]; then echo "avx2 ($n AVX instructions on ymm in libggml.a)"; return 0; fi ;;
    "0 0") if [ "$n" -eq 0 ] && [ "$z" -eq 0 ]; then echo "portable (no AVX instruction in libggml.a)"; return 0; fi ;;
  esac
  echo "inconsistent: ggml_cpu_has_avx2(), ggml_cpu_has_avx512() = $flag with $n instructions on ymm and $z on zmm in libggml.a"
  return 1
}

# The Makevars (R_MAKEVARS_USER) every build uses: GGML_USE_CPU_REPACK
# (above), and -O3 after R's -O2, as llama.cpp's and GGML's own release
# builds compile: at -O2 gcc 12 does not unroll GGML's loops over its
# accumulator arrays (GGML_F16_ARR, GGML_F32_ARR), so ggml_vec_dot_f16 and
# the other F16/F32 vector loops (attention's dot products among them) keep
# their sums on the stack, a store and reload per multiply-add
# (bench/ggml_gemv.c measures it). -O3 leaves the arithmetic as it is (no
# -ffast-math: sums are not reassociated). The avx512 build adds its flags
# here too (GGML's C and C++ sources both hold AVX-512 paths).
makevars() {
  echo 'CPPFLAGS += -DGGML_USE_CPU_REPACK'
  local v opt=-O3
  if [ "$want" = avx512 ]; then
    opt="$opt -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw"
    bash "$cpu" has avx512_vnni && opt="$opt -mavx512vnni"
    bash "$cpu" has avx512vbmi && opt="$opt -mavx512vbmi"
  fi
  for v in CFLAGS CXXFLAGS CXX11FLAGS CXX14FLAGS CXX17FLAGS CXX20FLAGS; do echo "$v += $opt"; done
}

# The verified build, for the tests that check what they link (FM_GGML_ISA_EXPECTED).
record() {
  mkdir -p "$lib/.ggmlr"
  echo "${got%% *}" >"$lib/.ggmlr/isa"
  echo "$vulkan" >"$lib/.ggmlr/vulkan"
}
vk_said() { [ "$vulkan" = yes ] && echo ", with GGML's Vulkan backend (ggml_backend_vk_reg in libggml.a)"; }

# A build with other Makevars than makevars() (an older setup's) is rebuilt.
flags_ok=0
cmp -s <(makevars) "$lib/.ggmlr/Makevars" 2>/dev/null && flags_ok=1
if got=$(probe) && [ "${got%% *}" = "$want" ] && [ $flags_ok = 1 ]; then
  record
  echo "setup: GGML (ggmlR $(R_LIBS=$rlibs Rscript -e 'cat(format(packageVersion("ggmlR")))') in $lib): $got$(vk_said)"
  exit 0
fi
[ $flags_ok = 1 ] || got="$got; Makevars not those of this setup"
echo "setup: building ggmlR from source into $lib, $want build, Vulkan: $vulkan (found: $got)"

# Dependencies first (into LIB when missing everywhere), then ggmlR alone.
R_LIBS=$rlibs GGMLR_TARBALL=${GGMLR_TARBALL:-} Rscript -e '
  lib <- commandArgs(TRUE)[1]
  db <- available.packages()
  deps <- tools::package_dependencies("ggmlR", db = db, which = c("Depends", "Imports", "LinkingTo"),
                                      recursive = TRUE)[[1]]
  deps <- setdiff(deps, rownames(installed.packages(priority = "high")))
  miss <- deps[!vapply(deps, requireNamespace, logical(1), quietly = TRUE)]
  if (length(miss)) install.packages(miss, lib = lib, quiet = TRUE)
  dir.create(file.path(lib, ".ggmlr"), showWarnings = FALSE)
  given <- Sys.getenv("GGMLR_TARBALL")
  if (nzchar(given)) {
    if (!file.exists(given)) stop("setup: GGMLR_TARBALL ", given, " does not exist")
    got <- matrix(c("ggmlR", normalizePath(given)), 1)
  } else {
    got <- download.packages("ggmlR", file.path(lib, ".ggmlr"), type = "source", quiet = TRUE)
  }
  if (!nrow(got)) stop("setup: could not download ggmlR from CRAN")
  cat(got[1, 2], "\n", file = file.path(lib, ".ggmlr", "tarball"))' "$lib"
tarball=$(tr -d ' \n' <"$lib/.ggmlr/tarball")
cargs="--without-vulkan"
[ "$vulkan" = yes ] && cargs="--with-vulkan"
[ "$want" != portable ] && cargs="$cargs --with-simd"
src=$tarball
if [ "$vulkan" = yes ]; then
  # ggmlR 0.8.8.1 chains VK_EXT_layer_settings (the validation layer's
  # settings) into vkCreateInstance unconditionally, a structure the Vulkan
  # headers have only since 1.3.261; Debian 12's are 1.3.239. Where the
  # headers lack it, that one statement is compiled without the chain (its
  # only use is with the validation layer, which a release build does not
  # load): an edit of the unpacked source, checked to have applied.
  rm -rf "$lib/.ggmlr/src" && mkdir -p "$lib/.ggmlr/src"
  tar -xzf "$tarball" -C "$lib/.ggmlr/src"
  src=$lib/.ggmlr/src/ggmlR
  misc=$src/src/ggml-vulkan/ggml-vulkan-misc.cpp
  if grep -q 'vk::LayerSettingEXT' "$misc"; then
    perl -0pi -e 's/\n([ \t]*std::vector<vk::LayerSettingEXT> settings = \{.*?&layer_setting_info\);\n)/\n#ifdef VK_EXT_layer_settings\n$1#else\n    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers, extensions);\n#endif\n/s' "$misc"
    grep -q '^#ifdef VK_EXT_layer_settings$' "$misc" ||
      { echo "setup: could not make $misc build without VK_EXT_layer_settings" >&2; exit 1; }
  fi
fi
log=$lib/.ggmlr/ggmlR-install.log
# MAKEFLAGS: ggmlR is the longest compile of the setup; use both cores
# (JOBS=1 leaves one to others: the Vulkan build compiles ~200 shader files).
mk=$lib/.ggmlr/Makevars
makevars >"$mk"
if ! R_MAKEVARS_USER=$mk R_LIBS=$rlibs MAKEFLAGS="-j${JOBS:-2}" R CMD INSTALL --no-test-load -l "$lib" "--configure-args=$cargs" "$src" >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "setup: R CMD INSTALL of $src failed (log: $log)" >&2
  exit 1
fi
grep -E '^ +(SIMD|Vulkan):' "$log" | sed 's/^ */setup: ggmlR configure said: /' || true
if ! got=$(probe) || [ "${got%% *}" != "$want" ]; then
  echo "setup: FAILED: ggmlR was built for '$want' (Vulkan: $vulkan) but the installed library is $got (log: $log)" >&2
  exit 1
fi
record
echo "setup: GGML verified: $got$(vk_said)"
