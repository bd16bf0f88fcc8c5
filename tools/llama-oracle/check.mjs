// Probe: node-llama-cpp's prebuilt CPU binary loads (no build, no download).
// Prints the llama.cpp release and exits 0, or prints why and exits 1.
// --system-info prints llama.cpp's system info instead: the instruction
// sets of the CPU variant of GGML it loaded ("CPU : SSE3 = 1 | ... |").
const systemInfo = process.argv.includes("--system-info");
try {
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.error });
  console.log(systemInfo ? llama.systemInfo.trim()
                         : `llama-oracle: node-llama-cpp loads llama.cpp ${llama.llamaCppRelease?.release ?? "?"} (${llama.buildType}, CPU)`);
  await llama.dispose();
  process.exit(0);
} catch (e) {
  console.error(`llama-oracle: node-llama-cpp does not load: ${e?.message ?? e}`);
  process.exit(1);
}
