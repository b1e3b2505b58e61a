// RestoreFormer++ and RestoreFormer (VQVAEGANMultiHeadTransformer): the state-dict layout in the
// official order and the configuration from the shapes.
#include <algorithm>
#include <string>

#include "converter/layouts.h"
#include "engine/core/error.h"

namespace gpen::conv {

namespace {

constexpr int kLevels = 6;

int64_t width(const RestoreformerConfig& c, int level) { return int64_t{c.ch} * RestoreformerConfig::kChMult[level]; }

// Whether the decoder's level (0 at 512 x 512 .. 5 at 16 x 16) has attention blocks: 16 x 16
// always, 32 x 32 with ex_multi_scale_num 1 (the official constructor's attn_resolutions [16, 32]).
bool decoder_attends(const RestoreformerConfig& c, int level) { return level == 5 || (level == 4 && c.ex_multi_scale_num == 1); }

}  // namespace

void RestoreformerConfig::check() const {
  const std::string what = ex_multi_scale_num == 1 ? "RestoreFormer++" : "RestoreFormer";
  if (ch < 32 || ch > 1024 || ch % 32 != 0)
    throw Error(what + ": ch " + std::to_string(ch) + " is not a multiple of GroupNorm's 32 groups up to 1024");
  if (n_embed < 1 || n_embed > (1 << 20)) throw Error(what + ": n_embed " + std::to_string(n_embed) + " is out of range");
  if (embed_dim < 1 || embed_dim > 8192) throw Error(what + ": embed_dim " + std::to_string(embed_dim) + " is out of range");
  if (z_channels < 1 || z_channels > 8192)
    throw Error(what + ": z_channels " + std::to_string(z_channels) + " is out of range");
  if (ex_multi_scale_num != 0 && ex_multi_scale_num != 1)
    throw Error(what + ": ex_multi_scale_num " + std::to_string(ex_multi_scale_num) + " (0 or 1)");
  for (int level : {4, 5})
    if (head_size < 1 || int64_t{ch} * kChMult[level] % head_size != 0)
      throw Error(what + ": " + std::to_string(int64_t{ch} * kChMult[level]) + " channels do not split into " +
                  std::to_string(head_size) + " heads");
}

nlohmann::json RestoreformerConfig::to_json() const {
  return {{"variant", ex_multi_scale_num == 1 ? "RestoreFormer++" : "RestoreFormer"},
          {"ch", ch},
          {"ch_mult", std::vector<int>(std::begin(kChMult), std::end(kChMult))},
          {"num_res_blocks", kNumResBlocks},
          {"attn_resolutions", ex_multi_scale_num == 1 ? std::vector<int>{16, 32} : std::vector<int>{16}},
          {"n_embed", n_embed},
          {"embed_dim", embed_dim},
          {"z_channels", z_channels},
          {"head_size", head_size},
          {"ex_multi_scale_num", ex_multi_scale_num},
          {"resolution", kResolution}};
}

RestoreformerConfig RestoreformerConfig::from_json(const nlohmann::json& j) {
  RestoreformerConfig c;
  if (!j.is_object()) throw Error("RestoreFormer config: not an object");
  auto integer = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_number_integer() || j[k].get<int64_t>() < 0 || j[k].get<int64_t>() > (1 << 20))
      throw Error(std::string("RestoreFormer config: missing or invalid '") + k + "'");
    return static_cast<int>(j[k].get<int64_t>());
  };
  c.ch = integer("ch");
  c.n_embed = integer("n_embed");
  c.embed_dim = integer("embed_dim");
  c.z_channels = integer("z_channels");
  c.head_size = integer("head_size");
  c.ex_multi_scale_num = integer("ex_multi_scale_num");
  if (j.contains("resolution") && j["resolution"] != kResolution)
    throw Error("RestoreFormer config: resolution " + j["resolution"].dump() + " (the network is 512)");
  if (j.contains("ch_mult") && j["ch_mult"] != nlohmann::json(std::vector<int>(std::begin(kChMult), std::end(kChMult))))
    throw Error("RestoreFormer config: ch_mult " + j["ch_mult"].dump() + " (the official 1, 2, 2, 4, 4, 8 only)");
  c.check();
  return c;
}

std::string restoreformer_model_name(const RestoreformerConfig& c) {
  return std::string(c.ex_multi_scale_num == 1 ? "RestoreFormer++ " : "RestoreFormer ") +
         std::to_string(RestoreformerConfig::kResolution);
}

std::vector<TensorSpec> restoreformer_layout(const RestoreformerConfig& c) {
  c.check();
  std::vector<TensorSpec> t;
  auto add = [&](const std::string& n, std::vector<int64_t> s) { t.push_back({c.key_prefix + n, std::move(s)}); };
  auto conv = [&](const std::string& p, int64_t out, int64_t in, int64_t k) {
    add(p + ".weight", {out, in, k, k});
    add(p + ".bias", {out});
  };
  auto norm = [&](const std::string& p, int64_t ch) {
    add(p + ".weight", {ch});
    add(p + ".bias", {ch});
  };
  auto resblock = [&](const std::string& p, int64_t in, int64_t out) {
    norm(p + ".norm1", in);
    conv(p + ".conv1", out, in, 3);
    norm(p + ".norm2", out);
    conv(p + ".conv2", out, out, 3);
    if (in != out) conv(p + ".nin_shortcut", out, in, 1);
  };
  // MultiHeadAttnBlock: norm2 normalises the queries' source in the decoder; the encoder's blocks
  // hold it too, unused.
  auto attn = [&](const std::string& p, int64_t ch) {
    norm(p + ".norm1", ch);
    norm(p + ".norm2", ch);
    for (const char* m : {".q", ".k", ".v", ".proj_out"}) conv(p + m, ch, ch, 1);
  };
  auto mid = [&](const std::string& p, int64_t ch) {
    resblock(p + ".block_1", ch, ch);
    attn(p + ".attn_1", ch);
    resblock(p + ".block_2", ch, ch);
  };
  const int64_t top = width(c, kLevels - 1);

  conv("encoder.conv_in", c.ch, 3, 3);
  int64_t in = c.ch;
  for (int l = 0; l < kLevels; ++l) {
    const std::string p = "encoder.down." + std::to_string(l);
    for (int b = 0; b < RestoreformerConfig::kNumResBlocks; ++b) {
      resblock(p + ".block." + std::to_string(b), in, width(c, l));
      in = width(c, l);
    }
    if (l == kLevels - 1)  // 16 x 16, the encoder's one attention resolution
      for (int b = 0; b < RestoreformerConfig::kNumResBlocks; ++b) attn(p + ".attn." + std::to_string(b), in);
    if (l != kLevels - 1) conv(p + ".downsample.conv", in, in, 3);
  }
  mid("encoder.mid", top);
  norm("encoder.norm_out", top);
  conv("encoder.conv_out", c.z_channels, top, 3);

  conv("decoder.conv_in", top, c.z_channels, 3);
  mid("decoder.mid", top);
  // The decoder's levels in module order (up.0 at 512 x 512); each level's input is the width of
  // the level above it, as the constructor builds them from 16 x 16 up.
  for (int l = 0; l < kLevels; ++l) {
    const std::string p = "decoder.up." + std::to_string(l);
    int64_t bin = l == kLevels - 1 ? top : width(c, l + 1);
    for (int b = 0; b <= RestoreformerConfig::kNumResBlocks; ++b) {
      resblock(p + ".block." + std::to_string(b), bin, width(c, l));
      bin = width(c, l);
    }
    if (decoder_attends(c, l))
      for (int b = 0; b <= RestoreformerConfig::kNumResBlocks; ++b) attn(p + ".attn." + std::to_string(b), bin);
    if (l != 0) conv(p + ".upsample.conv", bin, bin, 3);
  }
  norm("decoder.norm_out", c.ch);
  conv("decoder.conv_out", 3, c.ch, 3);

  add("quantize.embedding.weight", {c.n_embed, c.embed_dim});
  conv("quant_conv", c.embed_dim, c.z_channels, 1);
  conv("post_quant_conv", c.z_channels, c.embed_dim, 1);
  return t;
}

namespace {

std::string restoreformer_prefix(const ShapeMap& shapes) {
  return shapes.count("vqvae.decoder.mid.attn_1.q.weight") || shapes.count("vqvae.quantize.embedding.weight") ? "vqvae."
                                                                                                                : "";
}

}  // namespace

bool looks_like_restoreformer(const ShapeMap& shapes) {
  const std::string p = restoreformer_prefix(shapes);
  return shapes.count(p + "decoder.mid.attn_1.q.weight") ||
         (shapes.count(p + "encoder.mid.attn_1.norm2.weight") && shapes.count(p + "quant_conv.weight"));
}

RestoreformerConfig infer_restoreformer(const ShapeMap& m) {
  RestoreformerConfig c;
  c.key_prefix = restoreformer_prefix(m);
  auto shape = [&](const std::string& k, size_t rank) -> const std::vector<int64_t>& {
    auto it = m.find(c.key_prefix + k);
    if (it == m.end()) throw Error("RestoreFormer checkpoint lacks tensor '" + c.key_prefix + k + "'");
    if (it->second.size() != rank)
      throw Error("tensor '" + c.key_prefix + k + "' has shape " + shape_str(it->second) + ", expected rank " +
                  std::to_string(rank));
    return it->second;
  };
  auto clamp = [](int64_t v) { return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(v, 1 << 20))); };
  c.ch = clamp(shape("encoder.conv_in.weight", 4)[0]);
  const auto& book = shape("quantize.embedding.weight", 2);
  c.n_embed = clamp(book[0]);
  c.embed_dim = clamp(book[1]);
  c.z_channels = clamp(shape("encoder.conv_out.weight", 4)[0]);
  // Attention at 32 x 32 in the decoder tells RestoreFormer++ (ex_multi_scale_num 1) from
  // RestoreFormer; the head count follows the variant, as the official inference builds them.
  const std::string multi = c.key_prefix + "decoder.up.4.attn.";
  c.ex_multi_scale_num = std::any_of(m.begin(), m.end(), [&](const auto& kv) { return kv.first.rfind(multi, 0) == 0; }) ? 1 : 0;
  c.head_size = c.ex_multi_scale_num == 1 ? 4 : 8;
  c.check();
  return c;
}

Recognition recognize_restoreformer(const ShapeMap& shapes) {
  Recognition r;
  r.arch = Arch::restoreformer;
  r.restoreformer = infer_restoreformer(shapes);
  r.config = r.restoreformer.to_json();
  r.layout = restoreformer_layout(r.restoreformer);
  return r;
}

}  // namespace gpen::conv
