// gpen convert IN.(pth|safetensors) -o OUT.gpw: checkpoint -> engine weight file.
#include <chrono>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "apps/cli.h"
#include "reports/convert_args.h"
#include "converter/convert.h"
#include "engine/models/gpen.h"
#include "engine/core/error.h"

namespace {

using gpen::report::ConvertArgs;

void run_convert(const ConvertArgs& a) {
  using namespace gpen::conv;
  ConvertOptions opt = gpen::report::convert_options(a);
  const bool tty = ::isatty(STDERR_FILENO);
  int last_decile = -1;
  opt.progress = [&](uint64_t done, uint64_t total) {
    if (total < (uint64_t{64} << 20)) return;  // small files finish before progress matters
    int decile = static_cast<int>(done * 10 / total);
    if (decile == last_decile) return;
    last_decile = decile;
    std::fprintf(stderr, "%swriting %s: %3d%% (%.0f / %.0f MB)%s", tty ? "\r" : "", a.out.c_str(), decile * 10,
                 done / 1e6, total / 1e6, tty ? (done == total ? "\n" : "") : "\n");
    std::fflush(stderr);
  };
  auto t0 = std::chrono::steady_clock::now();
  OpenOptions oo;
  oo.key = a.key;
  auto ck = Checkpoint::open(a.in, oo);
  ConvertResult r = convert(*ck, a.out, opt);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ignored.empty())
    std::fprintf(stderr, "gpen: warning: ignored %zu tensor(s) the model does not use (first: %s)\n", r.ignored.size(),
                 r.ignored.front().c_str());
  std::printf("%s (%s%s%s) -> %s: %s %s, %zu tensors, %lld parameters, %llu bytes, %s storage, %.2f s\n",
              a.in.c_str(), r.source_format.c_str(), r.selected_key.empty() ? "" : ", key ",
              r.selected_key.c_str(), a.out.c_str(), arch_name(r.arch), r.config.dump().c_str(), r.tensors,
              static_cast<long long>(r.parameters), static_cast<unsigned long long>(r.bytes),
              gpen::dtype_name(opt.dtype), secs);
}

gpen::cli::Command reg(
    "convert", "Convert a PyTorch (.pth) or safetensors checkpoint (GPEN, RetinaFace, RealESRNet, ParseNet, GFPGAN, CodeFormer, RestoreFormer) into a .gpw weight file",
    [](CLI::App& sub) {
      auto a = std::make_shared<ConvertArgs>();
      sub.add_option("input", a->in, "Checkpoint (.pth zip or legacy format, or .safetensors)")->required();
      sub.add_option("-o,--output", a->out, "Output .gpw file (written atomically)")->required();
      sub.add_option("--arch", a->arch, "Model: auto (recognised from the tensor names), gpen, retinaface, realesrnet, parsenet, gfpgan, codeformer or restoreformer")
          ->check(CLI::IsMember({"auto", "gpen", "retinaface", "realesrnet", "parsenet", "gfpgan", "codeformer", "restoreformer"}));
      sub.add_option("--key", a->key, "Nested dict holding the weights (e.g. g_ema, params_ema, state_dict)");
      sub.add_option("--task", a->task,
                     "GPEN: record the task the weights were trained for (enhance, colorize, inpaint, seg2face) in the "
                     ".gpw, so that `gpen info` names it and `gpen restore` uses it by default; the official task "
                     "models share the FullGenerator layout, so it cannot be recognised from the tensors");
      sub.add_option("--dtype", a->dtype, "Storage of weight matrices and conv kernels: fp32, fp16, bf16, or (GPEN only) int8 / fp8: the big convs as 8-bit codes with per-output-channel scales, the rest fp32 (docs/weights-format.md)")
          ->check(CLI::IsMember({"fp32", "fp16", "bf16", "f32", "f16", "int8", "fp8"}));
      sub.add_option("--dense-dtype", a->dense_dtype,
                     "GPEN with --dtype int8|fp8: store dense layers (those of --dense-layers) as 8-bit too, with "
                     "per-output-row scales (int8, fp8; fp32 keeps them f32, the default)")
          ->check(CLI::IsMember({"fp32", "f32", "int8", "fp8"}));
      sub.add_option("--dense-layers", a->dense_layers,
                     "With --dense-dtype: which dense layers: modulation (the default: the per-layer style linears, "
                     "0.8 dB on the GPEN-512 layout), final_linear, style (the mapping MLP, the sensitive one), all, "
                     "or a comma-separated list (docs/memory.md, \"8-bit weights\")")
          ->capture_default_str();
      sub.add_option("--group-size", a->group_size,
                     "GPEN with --dtype int8|fp8: one scale per output channel and group of about N reduction rows "
                     "(e.g. 64) instead of one per output channel (0, the default); docs/weights-format.md")
          ->check(CLI::NonNegativeNumber);
      sub.callback([a] { run_convert(*a); });
    },
    20);

}  // namespace
