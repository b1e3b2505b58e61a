// RestoreFormer++: the graph (encoder with its kept features, quantizer, decoder attending to
// them) and RestoreformerModel, its runner.
#include "engine/models/restoreformer.h"

#include <map>

#include "engine/models/codeformer_blocks.h"
#include "weights/gpw.h"

namespace gpen {

namespace {

constexpr int kChMult[] = {1, 2, 2, 4, 4, 8};  // the official ch_mult
constexpr int kLevels = 6;
constexpr int kResBlocks = 2;

int conv1x1(Graph& g, int x, const std::string& name, int64_t cout) {
  Conv2dParams p;
  p.kh = p.kw = 1;
  p.has_bias = true;
  const int64_t cin = g.tensor(x).shape[3];
  return g.conv2d(x, g.weight(name + ".weight", g.activation_dtype(), Shape{1, 1, cin, cout}),
                  g.weight(name + ".bias", g.activation_dtype(), Shape{cout}), p, -1, -1, name);
}

int resblock(Graph& g, int x, int64_t cout, const std::string& p) { return codeformer_resblock(g, x, cout, p, "nin_shortcut"); }

// MultiHeadAttnBlock: self-attention of norm1(x) when query < 0, else queries from norm2(query).
int attn(Graph& g, int x, int heads, const std::string& p, int query = -1) {
  return vqgan_attn_block(g, x, heads, p, p + ".norm1", query, p + ".norm2");
}

}  // namespace

void RestoreformerNetConfig::check() const {
  GPEN_CHECK(ch >= 32 && ch <= 1024 && ch % 32 == 0,
             "RestoreFormer: ch " + std::to_string(ch) + " is not a multiple of GroupNorm's 32 groups up to 1024");
  GPEN_CHECK(n_embed >= 1 && n_embed <= (1 << 20), "RestoreFormer: n_embed " + std::to_string(n_embed) + " is out of range");
  GPEN_CHECK(embed_dim >= 1 && embed_dim <= 8192, "RestoreFormer: embed_dim " + std::to_string(embed_dim) + " is out of range");
  GPEN_CHECK(z_channels >= 1 && z_channels <= 8192,
             "RestoreFormer: z_channels " + std::to_string(z_channels) + " is out of range");
  GPEN_CHECK(ex_multi_scale_num == 0 || ex_multi_scale_num == 1,
             "RestoreFormer: ex_multi_scale_num " + std::to_string(ex_multi_scale_num) + " (0 or 1)");
  for (int level : {4, 5})
    GPEN_CHECK(head_size >= 1 && (int64_t{ch} * kChMult[level]) % head_size == 0,
               "RestoreFormer: " + std::to_string(int64_t{ch} * kChMult[level]) + " channels do not split into " +
                   std::to_string(head_size) + " heads");
  GPEN_CHECK(batch >= 1 && batch <= 4096, "RestoreFormer: batch " + std::to_string(batch) + " is out of range");
  GPEN_CHECK(act == DType::f32 || act == DType::f16 || act == DType::bf16,
             std::string("RestoreFormer: activation dtype ") + dtype_name(act) + " is not f32, f16 or bf16");
}

RestoreformerNetConfig restoreformer_config_from_gpw(const GpwFile& f) {
  GPEN_CHECK(f.arch() == "restoreformer", f.path() + " holds a '" + f.arch() + "' model, not RestoreFormer");
  const auto& j = f.config();
  RestoreformerNetConfig c;
  try {
    c.ch = j.at("ch").get<int>();
    c.n_embed = j.at("n_embed").get<int>();
    c.embed_dim = j.at("embed_dim").get<int>();
    c.z_channels = j.at("z_channels").get<int>();
    c.head_size = j.at("head_size").get<int>();
    c.ex_multi_scale_num = j.at("ex_multi_scale_num").get<int>();
    GPEN_CHECK(j.at("resolution").get<int>() == RestoreformerNetConfig::kSize,
               f.path() + ": RestoreFormer resolution " + j.at("resolution").dump() + " (the network is 512)");
    GPEN_CHECK(j.at("ch_mult") == nlohmann::json(std::vector<int>(std::begin(kChMult), std::end(kChMult))),
               f.path() + ": RestoreFormer ch_mult " + j.at("ch_mult").dump() + " (the official 1, 2, 2, 4, 4, 8 only)");
  } catch (const nlohmann::json::exception& e) {
    throw Error(f.path() + ": RestoreFormer configuration incomplete in the header (" + e.what() + ")");
  }
  try {
    c.check();
  } catch (const Error& e) {
    throw Error(f.path() + ": " + e.what());
  }
  return c;
}

RestoreformerGraph build_restoreformer_graph(const RestoreformerNetConfig& c) {
  c.check();
  RestoreformerGraph out;
  Graph& g = out.graph;
  g.set_activation_dtype(c.act);
  const int64_t N = c.batch, S = RestoreformerNetConfig::kSize;
  auto width = [&](int level) { return int64_t{c.ch} * kChMult[level]; };
  const int64_t top = width(kLevels - 1);

  // ---- Encoder. kept[l]: the feature at level l before its downsampling (the official
  // hs['block_l']), kept[5]: after mid.block_1 (hs['block_5_atten']); mid: hs['mid_atten'].
  out.input = g.input("input", c.act, Shape{N, S, S, 3});
  std::map<int, int> kept;
  int h = vqgan_conv3x3(g, out.input, "encoder.conv_in", c.ch);
  for (int l = 0; l < kLevels; ++l) {
    const std::string p = "encoder.down." + std::to_string(l);
    for (int b = 0; b < kResBlocks; ++b) {
      h = resblock(g, h, width(l), p + ".block." + std::to_string(b));
      if (l == kLevels - 1) h = attn(g, h, c.head_size, p + ".attn." + std::to_string(b));
    }
    if (l != kLevels - 1) {
      kept[l] = h;
      h = vqgan_conv3x3(g, h, p + ".downsample.conv", width(l), 2);
    }
  }
  h = resblock(g, h, top, "encoder.mid.block_1");
  kept[kLevels - 1] = h;
  h = attn(g, h, c.head_size, "encoder.mid.attn_1");
  h = resblock(g, h, top, "encoder.mid.block_2");
  const int mid = h;
  h = vqgan_conv3x3(g, vqgan_norm(g, h, "encoder.norm_out", true), "encoder.conv_out", c.z_channels);

  // ---- The nearest codebook entry of each position.
  const auto codes = g.code_lookup(conv1x1(g, h, "quant_conv", c.embed_dim),
                                   g.weight("quantize.embedding.weight", c.act, Shape{c.n_embed, c.embed_dim}),
                                   CodeLookup::argmin, "code_lookup");
  out.indices = codes.indices;
  g.mark_output(out.indices);

  // ---- Decoder, its attention blocks querying the encoder's features.
  h = vqgan_conv3x3(g, conv1x1(g, codes.features, "post_quant_conv", c.z_channels), "decoder.conv_in", top);
  h = resblock(g, h, top, "decoder.mid.block_1");
  h = attn(g, h, c.head_size, "decoder.mid.attn_1", mid);
  h = resblock(g, h, top, "decoder.mid.block_2");
  for (int l = kLevels - 1; l >= 0; --l) {
    const std::string p = "decoder.up." + std::to_string(l);
    const bool attends = l == kLevels - 1 || (l == kLevels - 2 && c.ex_multi_scale_num == 1);
    for (int b = 0; b <= kResBlocks; ++b) {
      h = resblock(g, h, width(l), p + ".block." + std::to_string(b));
      if (attends) h = attn(g, h, c.head_size, p + ".attn." + std::to_string(b), kept.at(l));
    }
    if (l != 0) {
      const int size = static_cast<int>(2 * g.tensor(h).shape[1]);
      h = vqgan_conv3x3(g, g.resize_nearest(h, size, size, p + ".upsample"), p + ".upsample.conv", width(l));
    }
  }
  out.output = vqgan_conv3x3(g, vqgan_norm(g, h, "decoder.norm_out", true), "decoder.conv_out", 3);
  g.mark_output(out.output);
  return out;
}

// ---- RestoreformerModel

RestoreformerModel::RestoreformerModel(const std::string& path, Backend& backend, std::optional<DType> precision)
    : net_(path, backend, network_precision(precision, backend, "RestoreFormer")) {
  config_ = restoreformer_config_from_gpw(net_.file());
  config_.act = net_.precision();
  net_.bind_weights(build_restoreformer_graph(config_).graph, "RestoreFormer");
}

RestoreformerModel::~RestoreformerModel() = default;

const MemoryPlan& RestoreformerModel::plan_for(int batch) {
  if (net_.holds({double(batch)})) return net_.plan();
  RestoreformerNetConfig c = config_;
  c.batch = batch;
  RestoreformerGraph rg = build_restoreformer_graph(c);
  return net_.install({double(batch)}, std::move(rg.graph),
                      {{"input", rg.input}, {"output", rg.output}, {"indices", rg.indices}});
}

void RestoreformerModel::run(const float* in, int batch, float* out, int32_t* indices) {
  plan_for(batch);
  net_.run({{"input", in}}, {{"output", out}, {"indices", indices}});
}

std::vector<double> RestoreformerModel::run_profiled(const float* in, int batch) {
  plan_for(batch);
  return net_.run_profiled({{"input", in}});
}

}  // namespace gpen
