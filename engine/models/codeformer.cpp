// CodeFormer: the graph (VQGAN encoder, transformer code prediction, codebook lookup, adaptive
// instance normalisation, VQGAN generator with the fuse blocks) and CodeformerModel, its runner.
#include "engine/models/codeformer.h"

#include <algorithm>
#include <map>

#include "engine/models/codeformer_blocks.h"
#include "weights/gpw.h"

namespace gpen {

namespace {

constexpr int kChMult[] = {1, 2, 2, 4, 4, 8};  // VQAutoEncoder's ch_mult as CodeFormer builds it
constexpr int kLevels = 6;
constexpr int kNf = 64;
constexpr int kFuseSizes[] = {16, 32, 64, 128, 256, 512};

// CodeFormer's fuse_encoder_block and fuse_generator_block: after which block of the encoder
// its feature of a size is kept, and after which block of the generator it is fused.
const std::map<int, int> kFuseEncoderBlock = {{512, 2}, {256, 5}, {128, 8}, {64, 11}, {32, 14}, {16, 18}};
const std::map<int, int> kFuseGeneratorBlock = {{16, 6}, {32, 9}, {64, 12}, {128, 15}, {256, 18}, {512, 21}};

struct Builder {
  Graph& g;

  int64_t channels(int x) const { return g.tensor(x).shape[3]; }
  int64_t size(int x) const { return g.tensor(x).shape[1]; }
  int weight(const std::string& name, const Shape& s) { return g.weight(name, g.activation_dtype(), s); }

  int conv(int x, const std::string& name, int64_t cout, int stride = 1) { return vqgan_conv3x3(g, x, name, cout, stride); }
  int norm(int x, const std::string& name) { return vqgan_norm(g, x, name, false); }
  // VQGAN's AttnBlock: single-head self-attention over the H x W positions of GroupNorm(x).
  int attn_block(int x, const std::string& p) { return vqgan_attn_block(g, x, 1, p, p + ".norm"); }
  int dense(int x, const std::string& name, int64_t out, bool bias) {
    const Shape xs = g.tensor(x).shape;
    const int64_t in = xs[xs.rank - 1];
    const int flat = g.reshape(x, Shape{xs.numel() / in, in}, name + ".rows");
    DenseParams d;
    const int y = g.dense(flat, weight(name + ".weight", Shape{out, in}), bias ? weight(name + ".bias", Shape{out}) : -1,
                          d, name);
    Shape ys = xs;
    ys[ys.rank - 1] = out;
    return g.reshape(y, ys, name + ".out");
  }
  int layer_norm(int x, const std::string& name) {
    const int64_t c = g.tensor(x).shape[g.tensor(x).shape.rank - 1];
    return g.layer_norm(x, weight(name + ".weight", Shape{c}), weight(name + ".bias", Shape{c}), LayerNormParams{1e-5f, true},
                        name);
  }

  // One of VQGAN's block lists (Encoder or Generator), as the official constructors lay it out:
  // each block's output handed to `after(index, x)`, which may replace it.
  template <class After>
  int vqgan(int x, const std::string& prefix, bool encoder, After after) {
    int i = 0;
    auto next = [&]() { return prefix + std::to_string(i); };
    auto done = [&](int y) {
      y = after(i, y);
      ++i;
      return y;
    };
    const int64_t top = int64_t{kNf} * kChMult[kLevels - 1];
    auto level = [&](int l) {
      for (int r = 0; r < 2; ++r) {
        x = done(codeformer_resblock(g, x, int64_t{kNf} * kChMult[l], next()));
        if (size(x) == 16) x = done(attn_block(x, next()));
      }
    };
    if (encoder) {
      x = done(conv(x, next(), kNf));
      for (int l = 0; l < kLevels; ++l) {
        level(l);
        if (l != kLevels - 1) x = done(conv(x, next() + ".conv", channels(x), 2));
      }
      x = done(codeformer_resblock(g, x, top, next()));
      x = done(attn_block(x, next()));
      x = done(codeformer_resblock(g, x, top, next()));
      x = done(norm(x, next()));
      return done(conv(x, next(), CodeformerNetConfig::kEmbDim));
    }
    x = done(conv(x, next(), top));
    x = done(codeformer_resblock(g, x, top, next()));
    x = done(attn_block(x, next()));
    x = done(codeformer_resblock(g, x, top, next()));
    for (int l = kLevels - 1; l >= 0; --l) {
      level(l);
      if (l != 0) {
        const std::string p = next();
        const int up = g.resize_nearest(x, static_cast<int>(2 * size(x)), static_cast<int>(2 * size(x)), p + ".upsample");
        x = done(conv(up, p + ".conv", channels(x)));
      }
    }
    x = done(norm(x, next()));
    return done(conv(x, next(), 3));
  }
};

}  // namespace

void CodeformerNetConfig::check() const {
  GPEN_CHECK(dim_embd >= 1 && dim_embd <= 8192, "CodeFormer: dim_embd " + std::to_string(dim_embd) + " is out of range");
  GPEN_CHECK(n_head >= 1 && dim_embd % n_head == 0,
             "CodeFormer: dim_embd " + std::to_string(dim_embd) + " does not split into " + std::to_string(n_head) + " heads");
  GPEN_CHECK(n_layers >= 0 && n_layers <= 256, "CodeFormer: n_layers " + std::to_string(n_layers) + " is out of range");
  GPEN_CHECK(codebook_size >= 1 && codebook_size <= (1 << 20),
             "CodeFormer: codebook_size " + std::to_string(codebook_size) + " is out of range");
  for (int s : connect_list)
    GPEN_CHECK(std::find(std::begin(kFuseSizes), std::end(kFuseSizes), s) != std::end(kFuseSizes),
               "CodeFormer: connect_list entry " + std::to_string(s) + " is not one of 16 .. 512");
  GPEN_CHECK(w >= 0.0f && w <= 1.0f, "CodeFormer: fidelity weight w " + std::to_string(w) + " is not in [0, 1]");
  GPEN_CHECK(batch >= 1 && batch <= 4096, "CodeFormer: batch " + std::to_string(batch) + " is out of range");
  GPEN_CHECK(act == DType::f32 || act == DType::f16 || act == DType::bf16,
             std::string("CodeFormer: activation dtype ") + dtype_name(act) + " is not f32, f16 or bf16");
}

CodeformerNetConfig codeformer_config_from_gpw(const GpwFile& f) {
  GPEN_CHECK(f.arch() == "codeformer", f.path() + " holds a '" + f.arch() + "' model, not CodeFormer");
  const auto& j = f.config();
  CodeformerNetConfig c;
  try {
    c.dim_embd = j.at("dim_embd").get<int>();
    c.n_head = j.at("n_head").get<int>();
    c.n_layers = j.at("n_layers").get<int>();
    c.codebook_size = j.at("codebook_size").get<int>();
    c.connect_list = j.at("connect_list").get<std::vector<int>>();
    GPEN_CHECK(j.at("resolution").get<int>() == CodeformerNetConfig::kSize,
               f.path() + ": CodeFormer resolution " + j.at("resolution").dump() + " (the network is 512)");
  } catch (const nlohmann::json::exception& e) {
    throw Error(f.path() + ": CodeFormer configuration incomplete in the header (" + e.what() + ")");
  }
  try {
    c.check();
  } catch (const Error& e) {
    throw Error(f.path() + ": " + e.what());
  }
  return c;
}

CodeformerGraph build_codeformer_graph(const CodeformerNetConfig& c) {
  c.check();
  CodeformerGraph out;
  Graph& g = out.graph;
  g.set_activation_dtype(c.act);
  Builder b{g};
  const int64_t N = c.batch, S = CodeformerNetConfig::kSize, Z = CodeformerNetConfig::kLatent;
  const int64_t E = c.dim_embd, L = Z * Z;
  auto connected = [&](int size) {
    return std::find(c.connect_list.begin(), c.connect_list.end(), size) != c.connect_list.end();
  };

  // ---- Encoder, its features at the connect_list sizes kept for the fuse blocks.
  out.input = g.input("input", c.act, Shape{N, S, S, 3});
  std::map<int, int> enc;
  const int lq = b.vqgan(out.input, "encoder.blocks.", true, [&](int i, int x) {
    for (int size : c.connect_list)
      if (kFuseEncoderBlock.at(size) == i) enc[size] = x;
    return x;
  });

  // ---- Transformer: the tokens of lq_feat (row-major positions) to code logits.
  int q = b.dense(g.reshape(lq, Shape{N, L, CodeformerNetConfig::kEmbDim}, "lq_tokens"), "feat_emb", E, true);
  const int pos = b.weight("position_emb", Shape{1, L, E});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "ft_layers." + std::to_string(l);
    Graph::AttentionInputs in{b.layer_norm(q, p + ".norm1"), pos,
                              b.weight(p + ".self_attn.in_proj_weight", Shape{3 * E, E}),
                              b.weight(p + ".self_attn.in_proj_bias", Shape{3 * E}),
                              b.weight(p + ".self_attn.out_proj.weight", Shape{E, E}),
                              b.weight(p + ".self_attn.out_proj.bias", Shape{E})};
    q = g.add(q, g.attention(in, c.n_head, p + ".self_attn"), AddParams{}, -1, p + ".attn_residual");
    int h = b.dense(b.layer_norm(q, p + ".norm2"), p + ".linear1", 2 * E, true);
    h = g.smooth_act(h, SmoothAct::gelu, p + ".gelu");
    q = g.add(q, b.dense(h, p + ".linear2", E, true), AddParams{}, -1, p + ".mlp_residual");
  }
  const int logits = b.dense(b.layer_norm(q, "idx_pred_layer.0"), "idx_pred_layer.1", c.codebook_size, false);

  // ---- The top-1 code of each position gathered from the codebook, with lq_feat's statistics.
  const auto codes = g.code_lookup(g.reshape(logits, Shape{N, Z, Z, c.codebook_size}, "logits_map"),
                                   b.weight("quantize.embedding.weight", Shape{c.codebook_size, CodeformerNetConfig::kEmbDim}),
                                   CodeLookup::argmax, "code_lookup");
  out.indices = codes.indices;
  g.mark_output(out.indices);
  const int quant = g.adain(codes.features, lq, AdaInParams{1e-5f}, "adain");

  // ---- Generator, fused with the encoder's features after the official blocks when w > 0.
  out.output = b.vqgan(quant, "generator.blocks.", false, [&](int i, int x) {
    if (c.w <= 0.0f) return x;
    for (const auto& [size, block] : kFuseGeneratorBlock)
      if (block == i && connected(size))
        return codeformer_fuse_block(g, enc.at(size), x, c.w, "fuse_convs_dict." + std::to_string(size));
    return x;
  });
  g.mark_output(out.output);
  return out;
}

// ---- CodeformerModel

CodeformerModel::CodeformerModel(const std::string& path, Backend& backend, std::optional<DType> precision)
    : net_(path, backend, network_precision(precision, backend, "CodeFormer")) {
  config_ = codeformer_config_from_gpw(net_.file());
  config_.act = net_.precision();
  CodeformerNetConfig all = config_;
  all.w = 1.0f;  // every weight bound, the fuse blocks' included
  net_.bind_weights(build_codeformer_graph(all).graph, "CodeFormer");
}

CodeformerModel::~CodeformerModel() = default;

const MemoryPlan& CodeformerModel::plan_for(int batch, float w) {
  if (net_.holds({double(batch), double(w)})) return net_.plan();
  CodeformerNetConfig c = config_;
  c.batch = batch;
  c.w = w;
  CodeformerGraph cg = build_codeformer_graph(c);
  return net_.install({double(batch), double(w)}, std::move(cg.graph),
                      {{"input", cg.input}, {"output", cg.output}, {"indices", cg.indices}});
}

void CodeformerModel::run(const float* in, int batch, float w, float* out, int32_t* indices) {
  plan_for(batch, w);
  net_.run({{"input", in}}, {{"output", out}, {"indices", indices}});
}

std::vector<double> CodeformerModel::run_profiled(const float* in, int batch, float w) {
  plan_for(batch, w);
  return net_.run_profiled({{"input", in}});
}

}  // namespace gpen
