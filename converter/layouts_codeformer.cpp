// CodeFormer (codeformer.pth's params_ema): its state-dict layout in the official order and its
// configuration from the shapes.
#include <algorithm>
#include <string>

#include "converter/layouts.h"
#include "engine/core/error.h"

namespace gpen::conv {

namespace {

constexpr int kChMult[] = {1, 2, 2, 4, 4, 8};  // VQAutoEncoder's ch_mult as CodeFormer builds it
constexpr int kLevels = 6;
constexpr int kFuseSizes[] = {16, 32, 64, 128, 256, 512};  // the sizes CodeFormer's channel table knows

// One block of VQGAN's Encoder or Generator, in the order of its nn.ModuleList.
struct VqBlock {
  enum Kind { conv, res, attn, down, up, norm } kind;
  int64_t cin, cout;
};

std::vector<VqBlock> vqgan_blocks(bool encoder) {
  const int64_t nf = CodeformerConfig::kNf;
  std::vector<VqBlock> b;
  int res = encoder ? CodeformerConfig::kResolution : CodeformerConfig::kResolution >> (kLevels - 1);
  auto level = [&](int l, int64_t& in) {
    const int64_t out = nf * kChMult[l];
    for (int r = 0; r < 2; ++r) {
      b.push_back({VqBlock::res, in, out});
      in = out;
      if (res == 16) b.push_back({VqBlock::attn, in, in});
    }
  };
  const int64_t top = nf * kChMult[kLevels - 1];
  if (encoder) {
    b.push_back({VqBlock::conv, 3, nf});
    int64_t in = nf;
    for (int l = 0; l < kLevels; ++l) {
      level(l, in);
      if (l != kLevels - 1) {
        b.push_back({VqBlock::down, in, in});
        res /= 2;
      }
    }
    b.push_back({VqBlock::res, top, top});
    b.push_back({VqBlock::attn, top, top});
    b.push_back({VqBlock::res, top, top});
    b.push_back({VqBlock::norm, top, top});
    b.push_back({VqBlock::conv, top, CodeformerConfig::kEmbDim});
  } else {
    b.push_back({VqBlock::conv, CodeformerConfig::kEmbDim, top});
    b.push_back({VqBlock::res, top, top});
    b.push_back({VqBlock::attn, top, top});
    b.push_back({VqBlock::res, top, top});
    int64_t in = top;
    for (int l = kLevels - 1; l >= 0; --l) {
      level(l, in);
      if (l != 0) {
        b.push_back({VqBlock::up, in, in});
        res *= 2;
      }
    }
    b.push_back({VqBlock::norm, nf, nf});
    b.push_back({VqBlock::conv, nf, 3});
  }
  return b;
}

}  // namespace

int CodeformerConfig::vqgan_channels(int res) {
  // CodeFormer's self.channels: the generator's width after the first ResBlock at each size.
  switch (res) {
    case 16: return 512;
    case 32: case 64: return 256;
    case 128: case 256: return 128;
    case 512: return 64;
    default: break;
  }
  throw Error("CodeFormer: no feature map of size " + std::to_string(res) + " (16 .. 512)");
}

void CodeformerConfig::check() const {
  if (dim_embd < 1 || dim_embd > 8192) throw Error("CodeFormer: dim_embd " + std::to_string(dim_embd) + " is out of range");
  if (n_head < 1 || dim_embd % n_head != 0)
    throw Error("CodeFormer: dim_embd " + std::to_string(dim_embd) + " does not split into " + std::to_string(n_head) +
                " heads");
  if (n_layers < 0 || n_layers > 256) throw Error("CodeFormer: n_layers " + std::to_string(n_layers) + " is out of range");
  if (codebook_size < 1 || codebook_size > (1 << 20))
    throw Error("CodeFormer: codebook_size " + std::to_string(codebook_size) + " is out of range");
  for (size_t i = 0; i < connect_list.size(); ++i) {
    if (std::find(std::begin(kFuseSizes), std::end(kFuseSizes), connect_list[i]) == std::end(kFuseSizes))
      throw Error("CodeFormer: connect_list entry " + std::to_string(connect_list[i]) + " is not one of 16 .. 512");
    if (i > 0 && connect_list[i] <= connect_list[i - 1])
      throw Error("CodeFormer: connect_list is not ascending without repeats");
  }
}

nlohmann::json CodeformerConfig::to_json() const {
  return {{"dim_embd", dim_embd},
          {"n_head", n_head},
          {"n_layers", n_layers},
          {"dim_mlp", 2 * dim_embd},
          {"codebook_size", codebook_size},
          {"latent_size", kLatent},
          {"connect_list", connect_list},
          {"resolution", kResolution},
          {"nf", kNf},
          {"ch_mult", std::vector<int>(std::begin(kChMult), std::end(kChMult))},
          {"emb_dim", kEmbDim}};
}

CodeformerConfig CodeformerConfig::from_json(const nlohmann::json& j) {
  CodeformerConfig c;
  if (!j.is_object()) throw Error("CodeFormer config: not an object");
  auto integer = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_number_integer() || j[k].get<int64_t>() < 0 || j[k].get<int64_t>() > (1 << 20))
      throw Error(std::string("CodeFormer config: missing or invalid '") + k + "'");
    return static_cast<int>(j[k].get<int64_t>());
  };
  c.dim_embd = integer("dim_embd");
  c.n_head = integer("n_head");
  c.n_layers = integer("n_layers");
  c.codebook_size = integer("codebook_size");
  if (!j.contains("connect_list") || !j["connect_list"].is_array())
    throw Error("CodeFormer config: missing or invalid 'connect_list'");
  c.connect_list.clear();
  for (const auto& v : j["connect_list"]) {
    if (!v.is_number_integer()) throw Error("CodeFormer config: 'connect_list' holds a non-integer");
    c.connect_list.push_back(v.get<int>());
  }
  if (j.contains("resolution") && j["resolution"] != kResolution)
    throw Error("CodeFormer config: resolution " + j["resolution"].dump() + " (CodeFormer is 512)");
  c.check();
  return c;
}

std::string codeformer_model_name(const CodeformerConfig&) { return "CodeFormer " + std::to_string(CodeformerConfig::kResolution); }

std::vector<TensorSpec> codeformer_layout(const CodeformerConfig& c) {
  c.check();
  const int64_t E = c.dim_embd, K = c.codebook_size;
  std::vector<TensorSpec> t;
  auto add = [&](std::string n, std::vector<int64_t> s) { t.push_back({std::move(n), std::move(s)}); };
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
    if (in != out) conv(p + ".conv_out", out, in, 1);
  };
  auto blocks = [&](const std::string& prefix, bool encoder) {
    const std::vector<VqBlock> bl = vqgan_blocks(encoder);
    for (size_t i = 0; i < bl.size(); ++i) {
      const std::string p = prefix + std::to_string(i);
      const VqBlock& b = bl[i];
      switch (b.kind) {
        case VqBlock::conv: conv(p, b.cout, b.cin, 3); break;
        case VqBlock::res: resblock(p, b.cin, b.cout); break;
        case VqBlock::attn:
          norm(p + ".norm", b.cin);
          for (const char* m : {".q", ".k", ".v", ".proj_out"}) conv(p + m, b.cin, b.cin, 1);
          break;
        case VqBlock::down:
        case VqBlock::up: conv(p + ".conv", b.cout, b.cin, 3); break;
        case VqBlock::norm: norm(p, b.cin); break;
      }
    }
  };
  // position_emb is CodeFormer's own parameter, so the state dict lists it before the submodules.
  add("position_emb", {CodeformerConfig::kLatent, E});
  blocks("encoder.blocks.", true);
  add("quantize.embedding.weight", {K, CodeformerConfig::kEmbDim});
  blocks("generator.blocks.", false);
  add("feat_emb.weight", {E, CodeformerConfig::kEmbDim});
  add("feat_emb.bias", {E});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "ft_layers." + std::to_string(l);
    add(p + ".self_attn.in_proj_weight", {3 * E, E});
    add(p + ".self_attn.in_proj_bias", {3 * E});
    add(p + ".self_attn.out_proj.weight", {E, E});
    add(p + ".self_attn.out_proj.bias", {E});
    add(p + ".linear1.weight", {2 * E, E});
    add(p + ".linear1.bias", {2 * E});
    add(p + ".linear2.weight", {E, 2 * E});
    add(p + ".linear2.bias", {E});
    norm(p + ".norm1", E);
    norm(p + ".norm2", E);
  }
  norm("idx_pred_layer.0", E);
  add("idx_pred_layer.1.weight", {K, E});
  for (int size : c.connect_list) {
    const int64_t ch = CodeformerConfig::vqgan_channels(size);
    const std::string p = "fuse_convs_dict." + std::to_string(size);
    resblock(p + ".encode_enc", 2 * ch, ch);
    for (const char* m : {".scale", ".shift"}) {
      conv(p + m + ".0", ch, ch, 3);
      conv(p + m + ".2", ch, ch, 3);
    }
  }
  return t;
}

bool looks_like_codeformer(const ShapeMap& shapes) {
  return shapes.count("idx_pred_layer.1.weight") || (shapes.count("position_emb") && shapes.count("feat_emb.weight"));
}

CodeformerConfig infer_codeformer(const ShapeMap& m) {
  auto shape = [&](const std::string& k, size_t rank) -> const std::vector<int64_t>& {
    auto it = m.find(k);
    if (it == m.end()) throw Error("CodeFormer checkpoint lacks tensor '" + k + "'");
    if (it->second.size() != rank)
      throw Error("tensor '" + k + "' has shape " + shape_str(it->second) + ", expected rank " + std::to_string(rank));
    return it->second;
  };
  auto clamp = [](int64_t v) { return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(v, 1 << 20))); };
  CodeformerConfig c;
  const auto& pos = shape("position_emb", 2);
  if (pos[0] != CodeformerConfig::kLatent)
    throw Error("tensor 'position_emb' has shape " + shape_str(pos) + ": CodeFormer's 16 x 16 codes need " +
                std::to_string(CodeformerConfig::kLatent) + " positions");
  c.dim_embd = clamp(pos[1]);
  c.codebook_size = clamp(shape("quantize.embedding.weight", 2)[0]);
  // Layers and fuse blocks from every key under their prefixes, so that a checkpoint missing one
  // tensor of them is reported as missing it rather than read as a smaller model.
  int layers = 0;
  std::vector<int> fused;
  for (const auto& kv : m) {
    const std::string& k = kv.first;
    if (k.rfind("ft_layers.", 0) == 0) {
      const size_t dot = k.find('.', 10);
      const std::string i = k.substr(10, dot == std::string::npos ? std::string::npos : dot - 10);
      if (!i.empty() && i.size() <= 3 && std::all_of(i.begin(), i.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
        layers = std::max(layers, std::stoi(i) + 1);
    }
    for (int size : kFuseSizes)
      if (k.rfind("fuse_convs_dict." + std::to_string(size) + ".", 0) == 0 &&
          std::find(fused.begin(), fused.end(), size) == fused.end())
        fused.push_back(size);
  }
  c.n_layers = layers;
  std::sort(fused.begin(), fused.end());
  c.connect_list = fused;
  c.check();
  return c;
}

Recognition recognize_codeformer(const ShapeMap& shapes) {
  Recognition r;
  r.arch = Arch::codeformer;
  r.codeformer = infer_codeformer(shapes);
  r.config = r.codeformer.to_json();
  r.layout = codeformer_layout(r.codeformer);
  return r;
}

}  // namespace gpen::conv
