// gpen serve: the restore pipeline as an HTTP service on one port (API: docs/openapi.yaml; how it
// behaves under load and abuse: docs/serving.md). The parts are in apps/serve/.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "apps/cli.h"
#include "engine/core/bytes.h"
#include "apps/serve/restorer_service.h"
#include "apps/serve/serve_http.h"
#include "apps/serve/serve_metrics.h"
#include "apps/serve/serve_routes.h"
#include "engine/core/error.h"

namespace gpen::cli {
namespace {

struct ServeArgs {
  serve::EngineOptions engine;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string max_body = "32MiB";
  int64_t max_pixels = 24'000'000;
  int queue = 64;
  double batch_wait_ms = 5;
  double read_timeout_s = 30;
  std::string api_key_file;
};

// The key is the file's first line without surrounding whitespace.
std::string read_api_key(const std::string& path) {
  std::ifstream f(path);
  GPEN_CHECK(f, path + ": cannot read the API key file");
  std::string line;
  std::getline(f, line);
  const auto first = line.find_first_not_of(" \t\r\n");
  const auto last = line.find_last_not_of(" \t\r\n");
  GPEN_CHECK(first != std::string::npos, path + ": the API key file's first line is empty");
  return line.substr(first, last - first + 1);
}

void run_serve(ServeArgs a) {
  serve::RouterOptions ro;
  ro.max_body = parse_bytes(a.max_body);
  ro.max_pixels = a.max_pixels;
  ro.queue = a.queue;
  if (!a.api_key_file.empty()) ro.api_key = read_api_key(a.api_key_file);
  serve::HttpOptions ho;
  ho.host = a.host;
  ho.port = a.port;
  ho.read_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.read_timeout_s * 1000));
  // Enough request threads to decode and encode on every core while others wait for the engine.
  ho.request_threads = std::min(a.queue, std::max(4, 2 * static_cast<int>(std::thread::hardware_concurrency())));
  ho.max_connections = 4 * a.queue;
  // Request bodies and images above 1 MiB are mapped and unmapped by malloc, not kept in its heap
  // once freed: the resident size after a burst of large uploads returns to what it was.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);

  serve::Metrics metrics(serve::Router::route_labels());
  a.engine.batch_wait = std::chrono::microseconds(static_cast<int64_t>(a.batch_wait_ms * 1000));
  a.engine.batch_depth = a.queue;
  a.engine.on_batch = [&metrics](int n) { metrics.batch(n); };
  serve::RestorerService service(a.engine);
  serve::Router router(service, metrics, ro);
  serve::HttpServer server(router, metrics, ho);
  std::fprintf(stderr, "gpen serve: listening on http://%s:%d (the models are loading)\n", a.host.c_str(),
               server.port());
  std::string failure;
  std::thread watcher([&] {
    try {
      service.wait_loaded();
      std::fprintf(stderr, "gpen serve: ready\n");
    } catch (const std::exception& e) {
      failure = e.what();
      server.stop();
    }
  });
  server.run();
  watcher.join();
  GPEN_CHECK(failure.empty(), failure);
  std::fprintf(stderr, "gpen serve: stopped\n");
}

ServeArgs g_args;

Command reg(
    "serve", "Serve restoration over HTTP: photos in, restored photos out (API: docs/openapi.yaml)",
    [](CLI::App& sub) {
      auto& e = g_args.engine.args;
      sub.add_option("-m,--model", e.model,
                     "Converted GPEN, GFPGAN, CodeFormer or RestoreFormer model (.gpw); its kind picks the flow, as `gpen restore` "
                     "(GFPGAN, CodeFormer, RestoreFormer: one face per run, requests take no mask or sr)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("-d,--detector", e.detector, "Converted RetinaFace model (.gpw)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("--parse", e.parse,
                     "Converted ParseNet model (.gpw): paste faces through the face-parsing mask by default, as "
                     "`gpen restore --parse`; with GPEN models requests may still ask for mask=rect")
          ->check(CLI::ExistingFile);
      sub.add_option("--sr", e.sr_model,
                     "RealESRNet model (.gpw): requests may ask for sr=1, as `gpen restore --sr` (GPEN models); "
                     "GFPGAN, CodeFormer, RestoreFormer: the background upsampler (RealESRGAN) of every answer")
          ->check(CLI::ExistingFile);
      sub.add_option("--host", g_args.host, "Address to listen on (another than loopback exposes the service)")
          ->capture_default_str();
      sub.add_option("--port", g_args.port, "Port to listen on (0: any free one, printed at start)")
          ->capture_default_str()
          ->check(CLI::Range(0, 65535));
      sub.add_option("--device", e.device, "cpu, cuda or auto (CUDA when a GPU is present; GFPGAN, CodeFormer, RestoreFormer: the CPU)")
          ->capture_default_str();
      sub.add_option("--upscale", e.upscale,
                     "GFPGAN, CodeFormer, RestoreFormer: answers at N x the photo's size, as `gpen restore --upscale`")
          ->capture_default_str()
          ->check(CLI::Range(1, 8));
      sub.add_flag("--only-center-face", e.only_center_face,
                   "GFPGAN, CodeFormer, RestoreFormer: restore only the face nearest each photo's centre");
      sub.add_option("--fidelity,-w", e.fidelity, "CodeFormer's fidelity weight w, as `gpen restore --fidelity`")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1.0));
      sub.add_flag("--face-upsample", e.face_upsample,
                   "CodeFormer with --sr: the restored faces upsampled too, as `gpen restore --face-upsample`");
      sub.add_option("--precision", e.precision,
                     "GPEN precision: fp32, fp16 or bf16 (default: fp32 on the CPU, fp16 on CUDA; GFPGAN, CodeFormer and RestoreFormer run fp32 "
                     "unless given fp16 / bf16 with --device cuda)");
      sub.add_option("--memory-budget,--vram-budget", e.vram_budget,
                     "Memory for GPEN (weights + arena + workspace), e.g. 2GiB: GPEN's batch limit is the largest "
                     "that fits, planned once at start (default: half the free RAM on CPU, 80% of the free GPU "
                     "memory on CUDA; with --sr, half of it); GPEN models");
      sub.add_option("--max-body", g_args.max_body, "Largest request body, e.g. 32MiB (larger: 413, left unread)")
          ->capture_default_str();
      sub.add_option("--max-pixels", g_args.max_pixels,
                     "Refuse images of more pixels than this, read from the image's header before decoding (400)")
          ->capture_default_str()
          ->check(CLI::Range(int64_t{1}, kMaxImagePixels));
      sub.add_option("--queue", g_args.queue,
                     "Restore and detect requests admitted at once (reading, waiting or running); more: 503 with "
                     "Retry-After")
          ->capture_default_str()
          ->check(CLI::Range(1, 4096));
      sub.add_option("--batch-wait-ms", g_args.batch_wait_ms,
                     "Most time a photo (or an aligned crop) waits for those of other requests to share its GPEN "
                     "batches")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 1000.0));
      sub.add_option("--read-timeout", g_args.read_timeout_s,
                     "Seconds a request's headers and body may take to arrive, from its first byte (then 408)")
          ->capture_default_str()
          ->check(CLI::Range(0.1, 3600.0));
      sub.add_option("--api-key-file", g_args.api_key_file,
                     "Every /v1 route needs Authorization: Bearer <the file's first line> (else 401)")
          ->check(CLI::ExistingFile);
      sub.callback([] { run_serve(g_args); });
    },
    40);

}  // namespace
}  // namespace gpen::cli
