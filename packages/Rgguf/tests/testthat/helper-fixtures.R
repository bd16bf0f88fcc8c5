# Fixtures live in ../shared/fixtures (env RFMALLOC_FIXTURES, set by the
# Makefile); tests that need them skip, saying why, when they are absent.
quant_zoo <- function() fixture_path("gguf", "derived", "quant-zoo-stories260K.gguf")
