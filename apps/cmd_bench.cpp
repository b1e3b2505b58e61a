// gpen bench: its options; the run is apps/bench_gpen.cpp (GPEN) and the bench_* files it hands
// the other architectures to.
#include "apps/bench_args.h"
#include "apps/cli.h"

namespace gpen::cli {
namespace {

BenchArgs g_args;

Command reg(
    "bench", "Time GPEN per face (or RetinaFace per photo), peak RSS and planned memory (optionally against PyTorch)",
    [](CLI::App& sub) {
      sub.add_option("-m,--model", g_args.model,
                     "Converted GPEN model (.gpw); without it, synthetic weights (--arch parsenet: the ParseNet .gpw; --arch gfpgan: "
                     "a GFPGAN .gpw, else synthetic weights)");
      sub.add_option("--arch", g_args.arch,
                     "gpen (synthetic weights unless -m), retinaface: time detect() on --image with -d, "
                     "realesrnet: RRDBNet on a --size square input (synthetic weights, --scale), or parsenet: "
                     "ParseNet (-m PARSENET.gpw) on a --size x --size input, CPU, or gfpgan: GFPGANv1Clean per face (CPU, or CUDA in --precision) "
                     "(synthetic weights of --size, --channel-multiplier, --narrow unless -m), codeformer: CodeFormer at --fidelity, or "
                     "restoreformer: RestoreFormer++ (both 512, the CPU or CUDA, synthetic weights of the released "
                     "configuration unless -m)")
          ->capture_default_str();
      sub.add_option("--scale", g_args.sr_scale, "--arch realesrnet: scale 1, 2 or 4")->capture_default_str();
      sub.add_option("--fidelity", g_args.fidelity, "--arch codeformer: the fidelity weight w in [0, 1]")
          ->capture_default_str();
      sub.add_option("--num-block", g_args.num_block, "--arch realesrnet: RRDB blocks (official 23)")->capture_default_str();
      sub.add_option("-d,--detector", g_args.detector, "--arch retinaface: RetinaFace weights (.gpw)");
      sub.add_option("--image", g_args.image, "--arch retinaface: the photo to detect faces in");
      sub.add_option("--pytorch-checkpoint", g_args.pytorch_checkpoint,
                     "--arch retinaface / parsenet --compare-pytorch: the .pth the PyTorch reference loads "
                     "(parsenet: random weights without it); --arch gfpgan / codeformer / restoreformer -m with "
                     "--accuracy or --compare: the checkpoint the .gpw was converted from");
      sub.add_option("--save-weights", g_args.save_weights,
                     "--arch gfpgan without -m: also keep the synthetic weights as this .gpw (a random-weight "
                     "model of the configuration, which `gpen restore`, `video` and `serve` take)");
      sub.add_option("--size", g_args.size, "GPEN resolution for synthetic weights")->capture_default_str();
      sub.add_option("--channel-multiplier", g_args.channel_multiplier, "GPEN channel multiplier")->capture_default_str();
      sub.add_option("--narrow", g_args.narrow, "GPEN narrow factor")->capture_default_str();
      sub.add_option("--batch", g_args.batch, "Faces per run")->capture_default_str()->check(CLI::PositiveNumber);
      sub.add_option("--arena-budget", g_args.arena_budget,
                     "GPEN: banded execution with the fewest extra FLOPs whose arena fits this, e.g. 24MiB");
      sub.add_option("--bands", g_args.bands, "GPEN: banded execution with exactly this many bands")
          ->check(CLI::Range(1, 2048));
      sub.add_option("--runs", g_args.runs, "Timed runs")->capture_default_str();
      sub.add_option("--warmup", g_args.warmup, "Untimed runs first")->capture_default_str();
      sub.add_option("--device", g_args.device, "cpu, cuda or auto (CUDA when a GPU is present)")->capture_default_str();
      sub.add_option("--precision", g_args.precision, "fp32, fp16 or bf16 (default: fp32 on the CPU, fp16 on CUDA; --arch gfpgan, codeformer, restoreformer: "
                     "fp32 on every device, as their official flows run, fp16 / bf16 on CUDA when asked)");
      sub.add_option("--weights-dtype", g_args.weights_dtype,
                     "Synthetic weights: the big convs as int8 or fp8 codes (as `gpen convert --dtype`); --accuracy "
                     "then compares with their fp32 originals")
          ->check(CLI::IsMember({"int8", "fp8", "fp32"}));
      sub.add_option("--dense-dtype", g_args.dense_dtype,
                     "Synthetic weights with --weights-dtype int8|fp8: the dense layers of --dense-layers as 8-bit "
                     "codes too (int8, fp8; fp32: float), as `gpen convert --dense-dtype`");
      sub.add_option("--dense-layers", g_args.dense_layers,
                     "With --dense-dtype: modulation, final_linear, style, all or a list (as gpen convert)")
          ->capture_default_str();
      sub.add_option("--group-size", g_args.group_size,
                     "Synthetic weights with --weights-dtype int8|fp8: scales per group of about N reduction rows "
                     "(0: per channel), as `gpen convert --group-size`");
      sub.add_option("--accuracy-reference", g_args.accuracy_reference,
                     "--accuracy against this .gpw instead of -m itself (e.g. the fp32 file of an int8 one)");
      sub.add_flag("--no-cuda-graphs", g_args.no_cuda_graphs, "CUDA: launch every kernel each run instead of replaying a captured graph");
      sub.add_flag("--json", g_args.json, "Print JSON");
      sub.add_flag("--compare-pytorch", g_args.compare_pytorch,
                   "Also time the PyTorch reference (PREFIX/share/gpen-engine/reference, or $GPEN_REFERENCE_DIR) on the same "
                   "configuration (needs torch for $GPEN_PYTHON, default /usr/bin/python3); on CUDA: eager at the "
                   "engine's precision (fp16 for fp16/bf16) and eager fp32, with speed and device-memory ratios");
      sub.add_flag("--compare-onnxruntime", g_args.compare_onnxruntime,
                   "Also time ONNX Runtime (CPU, fp32, same threads) on an ONNX export of the PyTorch reference "
                   "(peer_bench.py of the reference scripts, in the environment of --peers-python); output compared with PyTorch; "
                   "--arch retinaface: the network alone, exported from --pytorch-checkpoint; --arch gfpgan, codeformer "
                   "(w fixed in the export), restoreformer: the official network with the engine's weights and input, "
                   "output also compared with the engine's");
      sub.add_flag("--compare-openvino", g_args.compare_openvino,
                   "Also time OpenVINO (CPU, fp32, same threads) on the same ONNX export, as --compare-onnxruntime");
      sub.add_option("--compare", g_args.compare,
                     "Peers to time, comma-separated, from pytorch, onnxruntime, openvino (as the --compare-* flags)");
      sub.add_option("--peers-python", g_args.peers_python,
                     "The ONNX peers' interpreter: a Python environment with onnxruntime and openvino (default "
                     "$GPEN_PEERS_PYTHON; scripts/peers_venv.sh DIR makes one: DIR/bin/python); their exports are "
                     "cached in $GPEN_PEERS_CACHE (default ~/.cache/gpen-engine/peers)");
      sub.add_flag("--pytorch-compile", g_args.pytorch_compile,
                   "--compare-pytorch: also time torch.compile of the reference (compile time reported apart)");
      sub.add_option("--pytorch-variants", g_args.pytorch_variants,
                     "--compare-pytorch on CUDA: the PyTorch runs, comma-separated, from eager_fp32, eager_fp16, "
                     "eager_bf16, compile_fp32, compile_fp16, compile_bf16 (default: eager at the engine's precision, "
                     "eager fp32, and compile at the engine's precision with --pytorch-compile)");
      sub.add_option("--pytorch-timeout", g_args.pytorch_timeout,
                     "--compare-pytorch (and the ONNX peers): stop each peer run after this many seconds (0: never)")
          ->capture_default_str();
      sub.add_flag("--accuracy", g_args.accuracy,
                   "Also run the same weights on the same input on the CPU backend in fp32 and report max abs and "
                   "max relative difference of the raw output and the PSNR of the 8-bit faces (--arch gfpgan, codeformer, "
                   "restoreformer: against the official PyTorch network on the same weights and input, max and mean "
                   "abs, the last two also counting the codes picked apart from the official ones; on CUDA: "
                   "against the CPU backend in fp32, max and mean abs, whatever --precision)");
      sub.add_flag("--profile", g_args.profile,
                   "Also time every node alone (CUDA: events, no graph; median of max(3, --runs) runs) and print "
                   "(GPEN, ParseNet, CodeFormer, RestoreFormer++, RetinaFace: also by part of the detector) "
                   "time, share and GFLOP/s per op kind and for the slowest nodes");
      sub.callback([] { run_bench(g_args); });
    },
    60);

}  // namespace
}  // namespace gpen::cli
