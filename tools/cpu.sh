#!/usr/bin/env bash
# The CPU, for the project's scripts (setup, Makefile, isa-report, CI):
#   tools/cpu.sh has FLAG...  exit 0 when /proc/cpuinfo lists every flag
#   tools/cpu.sh levels       the paths `make test ISA=` can force here:
#                             portable, then avx2 and avx512 where the CPU
#                             runs them (the levels of core/include/fm/fm_cpu.h;
#                             avx2 also needs F16C, for GGML's SIMD build)
#   tools/cpu.sh describe     one line: model, cores and SIMD flags
set -uo pipefail
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | sed 's/^[^:]*://') "
has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
case ${1:-} in
  has) shift; has "$@" ;;
  levels)
    echo portable
    has avx2 fma f16c bmi1 bmi2 popcnt && echo avx2 && has avx512f avx512bw && echo avx512
    exit 0 ;;
  describe)
    simd=""
    for f in sse4_2 avx avx2 fma f16c bmi2 avx512f avx512bw avx512_vnni amx_int8; do has "$f" && simd="$simd $f"; done
    echo "$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | sed 's/^[^:]*: *//') ($(nproc) cores);${simd:- no SIMD flags}" ;;
  *) echo "usage: tools/cpu.sh has FLAG... | levels | describe" >&2; exit 2 ;;
esac
