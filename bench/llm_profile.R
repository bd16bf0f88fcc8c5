# Where the time goes (issue 17): perf profiles of us (Rllm) and llama.cpp
# (node-llama-cpp through tools/llama-oracle/oracle.mjs) on the same GGUF
# file and workload, one thread, for the rows bench/llm.R reports below
# goal. Each engine runs in a process of its own under `perf record`
# (sampling cycles, no call graphs); the report is each process's share of
# samples by shared object and symbol, so a kernel's share and the part
# outside the kernels (graph building, scheduling, R, node) can be compared
# between the engines. Model loading is inside the profile; the workloads
# are long enough (below) that it is a few percent.
#
#   Rscript bench/llm_profile.R            (part of make bench)
#
# Settings (environment):
#   PROFILE_ROWS   model:weights:phase,... (phase decode or prefill; models
#                  from build/bench-models, written by tools/gen-bench-models.R)
#                  default: the prefill of Q8_0 and Q4_0 (llama85m, smollm135m),
#                  the decode of llama85m in F16, Q8_0, Q4_0 and Q4_K_M
#   PROFILE_TOP    symbols listed per engine (default 8)
#   RLLM_ORACLE_DIR the llama.cpp variant (default tools/llama-oracle)
#   BENCH_OUT      file under bench/results (default llm_profile.txt)
# Workloads: decode, a 1-token prompt then 256 greedy tokens, twice;
# prefill, a 512-token prompt evaluated as one batch, three times.
# Needs perf (Debian linux-perf) and permission to sample (root, or
# kernel.perf_event_paranoid <= 1); says so and stops otherwise.
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "lib.R"))
root <- bench_root()
perf <- unname(Sys.which("perf"))
if (!nzchar(perf)) {
  cat("bench llm_profile: perf is not installed (Debian: linux-perf); nothing profiled\n")
  quit(status = 0)
}
oracle_home <- file.path(root, "tools", "llama-oracle")
source(file.path(oracle_home, "client.R"))
why <- oracle_unavailable()
if (!is.null(why)) cat("bench llm_profile: llama.cpp oracle unavailable (", why, "); ours only\n", sep = "")

rows <- trimws(strsplit(Sys.getenv("PROFILE_ROWS", paste(c(
  outer(c("llama85m", "smollm135m"), c("Q8_0", "Q4_0"), paste, "prefill", sep = ":"),
  outer("llama85m", c("F16", "Q8_0", "Q4_0", "Q4_K_M"), paste, "decode", sep = ":")),
  collapse = ",")), ",")[[1]])
top <- as.integer(Sys.getenv("PROFILE_TOP", "8"))
gen_dir <- file.path(root, "build", "bench-models")
out_path <- file.path(root, "bench", "results", Sys.getenv("BENCH_OUT", "llm_profile.txt"))
dir.create(dirname(out_path), recursive = TRUE, showWarnings = FALSE)
rscript <- file.path(R.home("bin"), "Rscript")

# The workload as a token-id vector: the same ids for both engines (BOS 1,
# then ordinary ids below 400, which every model here has).
workload <- function(phase) {
  if (phase == "decode") list(prompt = 1L, gen = 256L, reps = 2L)
  else list(prompt = c(1L, 3L + (seq_len(511L) * 7919L) %% 397L), gen = 1L, reps = 3L)
}

# One profiled process: perf record's samples, then perf report's flat
# table (percent, shared object, symbol) of the `top` largest.
profile <- function(cmd, argv) {
  data <- tempfile(fileext = ".perf")
  on.exit(unlink(data))
  t0 <- proc.time()[["elapsed"]]
  st <- system2(perf, c("record", "-q", "-F", "997", "-o", shQuote(data), "--", shQuote(cmd), argv),
                stdout = FALSE, stderr = FALSE)
  wall <- proc.time()[["elapsed"]] - t0
  if (st != 0) return(sprintf("  (perf record failed, status %d)", st))
  rep <- system2(perf, c("report", "-i", shQuote(data), "--stdio", "--no-children", "--sort", "dso,symbol",
                         "--percent-limit", "0.5"), stdout = TRUE, stderr = FALSE)
  rep <- sub("[ -]+$", "", grep("^ +[0-9.]+%", rep, value = TRUE))
  c(sprintf("  wall %.2f s (model loading included)", wall), utils::head(rep, top))
}

ours_argv <- function(path, w) {
  code <- sprintf(paste(
    "m <- Rllm::rllm_gguf_model('%s', threads = 1L);",
    "for (r in seq_len(%d)) Rllm::rllm_generate(m, c(%s), n_new = %dL, temperature = 0, stop_at_eog = FALSE)"),
    path, w$reps, paste(w$prompt, collapse = ","), w$gen)
  c("-e", shQuote(code))
}

peer_argv <- function(path, w) {
  c(shQuote(file.path(oracle_dir(), "oracle.mjs")), "bench", "--model", shQuote(path), "--threads", "1",
    "--tokens", paste(w$prompt, collapse = ","), "--gen-tokens", w$gen, "--reps", w$reps - 1L)
}

lines <- c(sprintf("# bench/llm_profile.R, %s; %s; perf samples by shared object and symbol, 1 thread",
                   format(Sys.time(), "%Y-%m-%d %H:%M"), utils::sessionInfo()$running),
           sprintf("# llama.cpp: %s", oracle_dir()))
for (r in rows) {
  f <- strsplit(r, ":", fixed = TRUE)[[1]]
  if (length(f) != 3 || !f[3] %in% c("decode", "prefill")) stop("PROFILE_ROWS: '", r, "' is not model:weights:decode|prefill")
  path <- file.path(gen_dir, sprintf("%s-%s.gguf", f[1], f[2]))
  if (!file.exists(path)) {
    lines <- c(lines, sprintf("\n## %s: %s absent (run tools/gen-bench-models.R)", r, path))
    next
  }
  w <- workload(f[3])
  first <- length(lines) + 1L
  lines <- c(lines, sprintf("\n## %s %s %s (prompt %d, generated %d, %d runs)", f[1], f[2], f[3],
                            length(w$prompt), w$gen, w$reps),
             "ours (Rllm):", profile(rscript, ours_argv(path, w)))
  if (is.null(why)) lines <- c(lines, "llama.cpp:", profile(oracle_node(), peer_argv(path, w)))
  writeLines(lines, out_path)
  cat(lines[first:length(lines)], sep = "\n")
}
# GGML's one-row products from L2, the heap and a file mapping
# (bench/ggml_gemv.c), compiled against the libggml.a Rllm links
gg <- system.file(package = "ggmlR")
exe <- file.path(root, "build", "ggml_gemv")
cc <- Sys.getenv("CC", "cc")
ld <- system2(file.path(R.home("bin"), "R"), c("CMD", "config", "--ldflags"), stdout = TRUE)
st <- system2(cc, c("-O2", "-I", shQuote(file.path(gg, "include")), "-I", shQuote(file.path(root, "core", "src", "llm")),
                    shQuote(file.path(root, "bench", "ggml_gemv.c")),
                    shQuote(file.path(gg, "lib", "libggml.a")), ld, "-lstdc++", "-lm", "-lpthread", "-fopenmp",
                    "-o", shQuote(exe)))
gemv <- if (st == 0) system2(exe, shQuote(tempdir()), stdout = TRUE) else "(bench/ggml_gemv.c did not compile)"
lines <- c(lines, sprintf("\n## GGML's one-row products (vec_dot), one thread, k = 768 (bench/ggml_gemv.c; %s)", gg), gemv)
cat(utils::tail(lines, length(gemv) + 1L), sep = "\n")
writeLines(lines, out_path)
cat("wrote", out_path, "\n")
