#include "converter/convert.h"

#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "engine/core/error.h"
#include "engine/core/version.h"
#include "converter/convert_internal.h"
#include "weights/quant8.h"

namespace gpen::conv {

std::string demod_q_name(const std::string& prefix) { return prefix + ".conv.demod_q"; }

namespace {

using namespace convert_detail;

ShapeMap shapes_of(const Checkpoint& ck) {
  ShapeMap m;
  for (const auto& t : ck.tensors()) m[t.name] = t.shape;
  return m;
}

void check_float(const Checkpoint& ck, const std::vector<TensorSpec>& layout) {
  for (const TensorSpec& s : layout) {
    if (s.integer) continue;
    const SourceTensor* t = ck.find(s.name);
    if (t && !src_dtype_is_float(t->dtype))
      throw Error("tensor '" + s.name + "' is " + src_dtype_name(t->dtype) + ", expected floating point");
  }
}

std::string describe(const Recognition& r) {
  if (r.arch == Arch::gpen) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "GPEN size %d%s (channel_multiplier %g, narrow %g)", r.gpen.size,
                  r.gpen.is_sr() ? (" -> " + std::to_string(r.gpen.out_size)).c_str() : "", r.gpen.channel_multiplier,
                  r.gpen.narrow);
    return buf;
  }
  if (r.arch == Arch::realesrnet)
    return "RealESRNet x" + std::to_string(r.realesrnet.scale) + " (RRDBNet, " + std::to_string(r.realesrnet.num_block) +
           " blocks)";
  if (r.arch == Arch::parsenet) return "ParseNet";
  if (r.arch == Arch::gfpgan) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s (channel_multiplier %g, narrow %g)", gfpgan_model_name(r.gfpgan).c_str(),
                  r.gfpgan.channel_multiplier, r.gfpgan.narrow);
    return buf;
  }
  if (r.arch == Arch::codeformer) {
    std::string connect;
    for (int s : r.codeformer.connect_list) connect += (connect.empty() ? "" : ", ") + std::to_string(s);
    return codeformer_model_name(r.codeformer) + " (dim_embd " + std::to_string(r.codeformer.dim_embd) + ", " +
           std::to_string(r.codeformer.n_layers) + " layers, codebook " + std::to_string(r.codeformer.codebook_size) +
           ", connect " + (connect.empty() ? "none" : connect) + ")";
  }
  if (r.arch == Arch::restoreformer)
    return restoreformer_model_name(r.restoreformer) + " (ch " + std::to_string(r.restoreformer.ch) + ", " +
           std::to_string(r.restoreformer.head_size) + " heads, codebook " + std::to_string(r.restoreformer.n_embed) +
           " x " + std::to_string(r.restoreformer.embed_dim) + ")";
  return std::string("RetinaFace ") + backbone_name(r.backbone);
}

// A conv weight (HWIO) or dense weight ([out][in]) computed by `make`: stored as `dt`, or, for
// the 8-bit dtypes, as its codes plus `<name>.qscale` right after it (f32, [out] per output
// channel, or [G, out] per group of about `group` reduction rows: weights/quant8.h).
void add_weight(GpwWriter& w, const std::string& name, DType dt, const Shape& shape, int64_t group,
                std::function<std::vector<float>()> make) {
  if (!dtype_is_8bit_weight(dt)) {
    add_computed(w, name, dt, shape, std::move(make));
    return;
  }
  w.add(name, dt, shape, [name, dt, shape, group, make](void* dst, size_t bytes) {
    std::vector<float> v = make();
    if (static_cast<int64_t>(v.size()) != shape.numel() || v.size() != bytes)
      throw Error("internal: size mismatch converting '" + name + "'");
    Quantized8Grouped q = quantize8_grouped(v.data(), shape, dt, group);
    std::memcpy(dst, q.codes.data(), bytes);
  });
  const Shape ss = q8_scale_shape(shape, q8_group_for(q8_axes(shape).k, group));
  add_computed(w, name + ".qscale", DType::f32, ss, [dt, shape, group, make] {
    std::vector<float> v = make();
    return quantize8_grouped(v.data(), shape, dt, group).scale;
  });
}

void plan_gpen(const Checkpoint& ck, const Recognition& rec, const ConvertOptions& opt, GpwWriter& w) {
  // 8-bit files quantise the big convs (add_weight) and, with --dense-dtype, the dense layers;
  // ToRGB and the first encoder conv keep f32 (docs/weights-format.md, "8-bit weights").
  const DType qdt = opt.dtype;
  const DType wdt = dtype_is_8bit_weight(qdt) ? DType::f32 : qdt;
  // The dense layers --dense-layers names (bits as engine/models/gpen.h Dense8Layer).
  auto ddt = [&](int bit) {
    return dtype_is_8bit_weight(opt.dense_dtype) && (opt.dense_layers & bit) ? opt.dense_dtype : wdt;
  };
  const int64_t group = opt.q8_group;
  const GpenConfig& c = rec.gpen;
  const double D = c.style_dim;
  const Checkpoint* ckp = &ck;
  for (const TensorSpec& s : rec.layout) {
    const std::string& n = s.name;
    if (ends_with(n, ".kernel")) continue;  // FIR buffers: the engine uses the constant [1,3,3,1] FIR
    const std::vector<int64_t>& sh = s.shape;
    if (n.rfind("generator.style.", 0) == 0) {
      // EqualLinear(lr_mul 0.01): W * (1/sqrt(in)) * lr_mul, b * lr_mul.
      if (ends_with(n, ".weight")) {
        float scale = static_cast<float>((1.0 / std::sqrt(D)) * 0.01);
        add_weight(w, n, ddt(4), to_shape({sh[0], sh[1]}), group, [ckp, n, scale] {
          auto v = Src{*ckp}.f32(n);
          for (float& x : v) x *= scale;
          return v;
        });
      } else {
        add_computed(w, n, DType::f32, to_shape({sh[0]}), [ckp, n] {
          auto v = Src{*ckp}.f32(n);
          for (float& x : v) x *= 0.01f;
          return v;
        });
      }
    } else if (n == "generator.input.input") {
      const int64_t C = sh[1];
      add_computed(w, n, DType::f32, to_shape({1, 4, 4, C}), [ckp, n, C] { return chw4x4_to_hwc(Src{*ckp}.f32(n), 1, C); });
    } else if (ends_with(n, ".conv.weight")) {
      // Modulated conv (1, out, in, k, k): W / sqrt(in k k) as HWIO, plus Q for demodulation.
      const int64_t O = sh[1], I = sh[2], K = sh[3];
      const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(I * K * K)));
      const std::string prefix0 = n.substr(0, n.size() - std::strlen(".conv.weight"));
      const bool rgb = prefix0.find("to_rgb") != std::string::npos;
      add_weight(w, n, rgb ? wdt : qdt, to_shape({K, K, I, O}), group, [ckp, n, O, I, K, scale] {
        return to_hwio(Src{*ckp}.f32(n), O, I, K, scale);
      });
      const std::string prefix = n.substr(0, n.size() - std::strlen(".conv.weight"));
      if (prefix.find("to_rgb") == std::string::npos) {
        add_computed(w, demod_q_name(prefix), DType::f32, to_shape({O, I}), [ckp, n, O, I, K, scale] {
          auto v = Src{*ckp}.f32(n);
          std::vector<float> q(static_cast<size_t>(O * I));
          for (int64_t oi = 0; oi < O * I; ++oi) {
            double acc = 0;
            for (int64_t k = 0; k < K * K; ++k) {
              double x = static_cast<double>(v[static_cast<size_t>(oi * K * K + k)] * scale);
              acc += x * x;
            }
            q[static_cast<size_t>(oi)] = static_cast<float>(acc);
          }
          return q;
        });
      }
    } else if (ends_with(n, ".conv.modulation.weight")) {
      const float scale = static_cast<float>(1.0 / std::sqrt(D));
      add_weight(w, n, ddt(1), to_shape({sh[0], sh[1]}), group, [ckp, n, scale] {
        auto v = Src{*ckp}.f32(n);
        for (float& x : v) x *= scale;
        return v;
      });
    } else if (n.rfind("generator.to_rgb", 0) == 0 && ends_with(n, ".bias") && sh.size() == 4) {
      add_computed(w, n, DType::f32, to_shape({3}), [ckp, n] { return Src{*ckp}.f32(n); });
    } else if (n.rfind("ecd", 0) == 0 && ends_with(n, ".weight")) {
      const int64_t O = sh[0], I = sh[1], K = sh[2];
      const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(I * K * K)));
      const bool first = n.rfind("ecd0.", 0) == 0;  // 3 input channels: tiny, and it sees the raw image
      add_weight(w, n, first ? wdt : qdt, to_shape({K, K, I, O}), group, [ckp, n, O, I, K, scale] {
        return to_hwio(Src{*ckp}.f32(n), O, I, K, scale);
      });
    } else if (n == "final_linear.0.weight") {
      // Columns from PyTorch's flatten order (c, y, x) to the engine's NHWC order (y, x, c).
      const int64_t O = sh[0], In = sh[1], C = In / 16;
      const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(In)));
      add_weight(w, n, ddt(2), to_shape({O, In}), group,
                 [ckp, n, O, C, scale] { return chw4x4_to_hwc(Src{*ckp}.f32(n), O, C, scale); });
    } else {
      // Biases (modulation, activate, encoder, final_linear) and noise weights: unchanged.
      Shape shape;
      for (int64_t d : sh) shape.d[shape.rank++] = d;
      add_computed(w, n, DType::f32, shape, [ckp, n] { return Src{*ckp}.f32(n); });
    }
  }
}

// Convs with their BatchNorm folded (RetinaFace, ParseNet): docs/weights-format.md.
void plan_units(const Checkpoint& ck, const std::vector<ConvUnit>& units, DType wdt, GpwWriter& w) {
  const Checkpoint* ckp = &ck;
  for (const ConvUnit& u : units) {
    const int64_t O = u.out, I = u.in / u.groups, K = u.k;
    // Per-output-channel scale and bias of the folded BatchNorm (eps 1e-5), in double.
    auto fold = [ckp, u, O]() {
      std::pair<std::vector<double>, std::vector<double>> sb;
      auto& [scale, bias] = sb;
      scale.assign(static_cast<size_t>(O), 1.0);
      bias.assign(static_cast<size_t>(O), 0.0);
      Src src{*ckp};
      std::vector<float> conv_bias;
      if (u.conv_bias) conv_bias = src.f32(u.conv + ".bias");
      if (!u.bn.empty()) {
        auto g = src.f32(u.bn + ".weight"), b = src.f32(u.bn + ".bias");
        auto m = src.f32(u.bn + ".running_mean"), v = src.f32(u.bn + ".running_var");
        for (int64_t o = 0; o < O; ++o) {
          size_t k = static_cast<size_t>(o);
          double s = static_cast<double>(g[k]) / std::sqrt(static_cast<double>(v[k]) + 1e-5);
          scale[k] = s;
          bias[k] = static_cast<double>(b[k]) - static_cast<double>(m[k]) * s +
                    (u.conv_bias ? static_cast<double>(conv_bias[k]) * s : 0.0);
        }
      } else if (u.conv_bias) {
        for (int64_t o = 0; o < O; ++o) bias[static_cast<size_t>(o)] = conv_bias[static_cast<size_t>(o)];
      }
      return sb;
    };
    add_computed(w, u.conv + ".weight", wdt, to_shape({K, K, I, O}), [ckp, u, O, I, K, fold] {
      auto sb = fold();
      return to_hwio(Src{*ckp}.f32(u.conv + ".weight"), O, I, K, 1.0f, &sb.first);
    });
    add_computed(w, u.conv + ".bias", DType::f32, to_shape({O}), [fold] {
      auto sb = fold();
      return std::vector<float>(sb.second.begin(), sb.second.end());
    });
  }
}

// RRDBNet: plain convs with bias; weights OIHW -> HWIO, biases unchanged.
void plan_realesrnet(const Checkpoint& ck, const Recognition& rec, DType wdt, GpwWriter& w) {
  const Checkpoint* ckp = &ck;
  for (const TensorSpec& s : rec.layout) {
    const std::string n = s.name;
    const std::vector<int64_t> sh = s.shape;
    if (sh.size() == 4) {
      add_computed(w, n, wdt, to_shape({sh[2], sh[3], sh[1], sh[0]}), [ckp, n, sh] {
        return to_hwio(Src{*ckp}.f32(n), sh[0], sh[1], sh[2], 1.0f);
      });
    } else {
      add_computed(w, n, DType::f32, to_shape({sh[0]}), [ckp, n] { return Src{*ckp}.f32(n); });
    }
  }
}

}  // namespace

CheckpointSummary summarize(const Checkpoint& ck, Arch want) {
  CheckpointSummary s;
  for (const auto& t : ck.tensors()) {
    ++s.tensors;
    if (src_dtype_is_float(t.dtype)) s.parameters += static_cast<int64_t>(t.numel);
    s.bytes += t.nbytes;
  }
  try {
    Recognition r = recognize(shapes_of(ck), want);
    s.arch = r.arch;
    s.config = r.config;
    try {
      s.ignored = validate_layout(r.layout, shapes_of(ck));
      check_float(ck, r.layout);
      s.valid = true;
    } catch (const Error& e) {
      s.problem = describe(r) + ": " + e.what();
    }
  } catch (const Error& e) {
    s.problem = e.what();
  }
  return s;
}

ConversionPlan plan_conversion(const Checkpoint& ck, const ConvertOptions& opt) {
  if (opt.dtype != DType::f32 && opt.dtype != DType::f16 && opt.dtype != DType::bf16 && !dtype_is_8bit_weight(opt.dtype))
    throw Error(std::string("--dtype ") + dtype_name(opt.dtype) +
                " is not a weight storage type (use fp32, fp16, bf16, int8 or fp8)");
  ShapeMap shapes = shapes_of(ck);
  Recognition rec;
  try {
    rec = recognize(shapes, opt.arch);
  } catch (const Error& e) {
    throw Error(ck.name() + ": " + e.what());
  }
  if (dtype_is_8bit_weight(opt.dtype) && rec.arch != Arch::gpen)
    throw Error(ck.name() + ": --dtype " + dtype_name(opt.dtype) + " is for GPEN models only (this is " + describe(rec) +
                "; use fp32, fp16 or bf16)");
  if ((dtype_is_8bit_weight(opt.dense_dtype) || opt.q8_group != 0) && !dtype_is_8bit_weight(opt.dtype))
    throw Error("--dense-dtype and --group-size apply to 8-bit weights only (--dtype int8 or fp8)");
  if (opt.dense_dtype != DType::f32 && !dtype_is_8bit_weight(opt.dense_dtype))
    throw Error(std::string("--dense-dtype ") + dtype_name(opt.dense_dtype) + " is not an 8-bit dtype (int8 or fp8)");
  if (opt.q8_group < 0) throw Error("--group-size must be >= 0 (0: one scale per output channel)");
  ConvertResult info;
  info.arch = rec.arch;
  info.config = rec.config;
  info.source_format = ck.format();
  info.selected_key = ck.selected_key();
  try {
    info.ignored = validate_layout(rec.layout, shapes);
    check_float(ck, rec.layout);
  } catch (const Error& e) {
    throw Error(ck.name() + ": " + describe(rec) + ": " + e.what());
  }
  if (!opt.task.empty()) {
    static const char* const known[] = {"enhance", "colorize", "inpaint", "seg2face"};
    if (std::find(std::begin(known), std::end(known), opt.task) == std::end(known))
      throw Error("unknown task '" + opt.task + "' (expected enhance, colorize, inpaint or seg2face)");
    if (rec.arch != Arch::gpen) throw Error(ck.name() + ": --task applies to GPEN models only");
    rec.config["task"] = opt.task;
    info.config = rec.config;
  }
  if (rec.arch == Arch::gpen && opt.q8_group > 0) {
    rec.config["quant8_group"] = opt.q8_group;  // the graph builder's GpenConfig::q8_group
    info.config = rec.config;
  }
  GpwWriter w(arch_name(rec.arch), rec.config);
  w.set_storage_dtype(opt.dtype);
  if (rec.arch == Arch::gpen) plan_gpen(ck, rec, opt, w);
  else if (rec.arch == Arch::realesrnet) plan_realesrnet(ck, rec, opt.dtype, w);
  else if (rec.arch == Arch::gfpgan) convert_detail::plan_gfpgan(ck, rec, opt.dtype, w);
  else if (rec.arch == Arch::codeformer) convert_detail::plan_codeformer(ck, rec, opt.dtype, w);
  else if (rec.arch == Arch::restoreformer) convert_detail::plan_restoreformer(ck, rec, opt.dtype, w);
  else if (rec.arch == Arch::parsenet) plan_units(ck, parsenet_units(), opt.dtype, w);
  else plan_units(ck, retinaface_units(rec.backbone), opt.dtype, w);
  nlohmann::json src = {{"format", ck.format()}};
  if (!ck.selected_key().empty()) src["key"] = ck.selected_key();
  w.set_meta("source", src);
  w.set_meta("producer", std::string("gpen convert ") + gpen::version());
  info.tensors = w.size();
  info.parameters = w.parameter_count();
  info.bytes = w.file_bytes();
  return ConversionPlan{std::move(info), std::move(w)};
}

ConvertResult convert(const Checkpoint& ck, const std::string& out_path, const ConvertOptions& opt) {
  ConversionPlan plan = plan_conversion(ck, opt);
  plan.writer.write(out_path, opt.progress);
  return plan.info;
}

ConvertResult convert(const std::string& in_path, const std::string& out_path, const ConvertOptions& opt) {
  OpenOptions oo;
  oo.key = opt.key;
  auto ck = Checkpoint::open(in_path, oo);
  return convert(*ck, out_path, opt);
}

}  // namespace gpen::conv
