# The random-weight architecture models of test-arch.R: the recipe is an
# installed file of the package (inst/arch/arch_gguf.R), which the
# project's tools/gen-arch-ggufs.R also sources.
source(system.file("arch", "arch_gguf.R", package = "Rllm", mustWork = TRUE), local = TRUE)
