#include "engine/graph/graph.h"
#include "engine/graph/overloaded.h"

#include <type_traits>

namespace gpen {

using graph_detail::overloaded;

namespace {

Shape nhwc(int64_t n, int64_t h, int64_t w, int64_t c) { return Shape{n, h, w, c}; }
}  // namespace

const char* op_name(const OpParams& p) {
  return std::visit(overloaded{
                        [](const Conv2dParams& c) { return c.groups > 1 ? "conv2d_grouped" : "conv2d"; },
                        [](const DenseParams&) { return "dense"; },
                        [](const BiasActParams&) { return "bias_act"; },
                        [](const AddParams&) { return "add"; },
                        [](const ResizeNearestParams&) { return "resize_nearest"; },
                        [](const UpFirDn2dParams&) { return "upfirdn2d"; },
                        [](const SoftmaxParams&) { return "softmax"; },
                        [](const PixelNormParams&) { return "pixel_norm"; },
                        [](const DemodParams&) { return "demod"; },
                        [](const ModConvParams& m) { return m.up ? "modconv_up" : "modconv"; },
                        [](const MaxPool2dParams&) { return "max_pool2d"; },
                        [](const PixelUnshuffleParams&) { return "pixel_unshuffle"; },
                        [](const PadReflectParams&) { return "pad_reflect"; },
                        [](const ResizeBilinearParams&) { return "resize_bilinear"; },
                        [](const NoiseBiasActParams&) { return "noise_bias_act"; },
                        [](const SftParams&) { return "sft"; },
                        [](const GroupNormParams&) { return "group_norm"; },
                        [](const LayerNormParams&) { return "layer_norm"; },
                        [](const SmoothActParams& a) { return a.fn == SmoothAct::gelu ? "gelu" : "silu"; },
                        [](const AttentionParams&) { return "attention"; },
                        [](const CodeLookupParams& c) { return c.mode == CodeLookup::argmax ? "code_argmax" : "code_argmin"; },
                        [](const FuseSftParams&) { return "fuse_sft"; },
                        [](const AdaInParams&) { return "adain"; },
                    },
                    p);
}

int Graph::add_tensor(TensorDesc d) {
  if (d.kind != TensorKind::View) d.strides = dense_strides(d.shape);
  tensors_.push_back(std::move(d));
  return static_cast<int>(tensors_.size()) - 1;
}

std::string Graph::auto_name(const std::string& name, const char* op) {
  return name.empty() ? std::string(op) + "_" + std::to_string(nodes_.size()) : name;
}

int Graph::input(const std::string& name, DType dt, const Shape& s) {
  return add_tensor({name, dt, s, {}, TensorKind::Input});
}
int Graph::weight(const std::string& name, DType dt, const Shape& s) {
  return add_tensor({name, dt, s, {}, TensorKind::Weight});
}
int Graph::buffer(const std::string& name, DType dt, const Shape& s) {
  return add_tensor({name, dt, s, {}, TensorKind::Intermediate});
}
int Graph::new_intermediate(const std::string& name, DType dt, const Shape& s) {
  return add_tensor({name, dt, s, {}, TensorKind::Intermediate});
}

int Graph::slice_channels(int t, int64_t c0, int64_t c, const std::string& name) {
  const TensorDesc& src = tensor(t);
  int last = src.shape.rank - 1;
  GPEN_CHECK(last >= 0 && c0 >= 0 && c > 0 && c0 + c <= src.shape[last],
             "slice_channels: [" + std::to_string(c0) + ", " + std::to_string(c0 + c) + ") outside " +
                 src.shape.str() + " of " + src.name);
  GPEN_CHECK(src.strides[last] == 1, "slice_channels: channel axis of " + src.name + " is not contiguous");
  TensorDesc v{name.empty() ? src.name + "[c" + std::to_string(c0) + ":" + std::to_string(c0 + c) + "]" : name,
               src.dtype, src.shape, src.strides, TensorKind::View};
  v.shape[last] = c;
  v.base = t;
  v.offset = c0;
  return add_tensor(v);
}

int Graph::slice_rows(int t, int64_t r0, int64_t rows, const std::string& name) {
  const TensorDesc& src = tensor(t);
  GPEN_CHECK(src.shape.rank == 4 && r0 >= 0 && rows > 0 && r0 + rows <= src.shape[1],
             "slice_rows: rows [" + std::to_string(r0) + ", " + std::to_string(r0 + rows) + ") outside " +
                 src.shape.str() + " of " + src.name);
  TensorDesc v{name.empty() ? src.name + "[r" + std::to_string(r0) + ":" + std::to_string(r0 + rows) + "]" : name,
               src.dtype, src.shape, src.strides, TensorKind::View};
  v.shape[1] = rows;
  v.base = t;
  v.offset = r0 * src.strides[1];
  return add_tensor(v);
}

int Graph::reshape(int t, const Shape& s, const std::string& name) {
  const TensorDesc& src = tensor(t);
  GPEN_CHECK(s.numel() == src.shape.numel(),
             "reshape of " + src.name + " from " + src.shape.str() + " to " + s.str() + " changes the size");
  GPEN_CHECK(src.strides == dense_strides(src.shape), "reshape of a strided view " + src.name);
  TensorDesc v{name.empty() ? src.name + "_reshaped" : name, src.dtype, s, dense_strides(s), TensorKind::View};
  v.base = t;
  return add_tensor(v);
}

void Graph::mark_output(int t) { tensors_.at(t).is_output = true; }

int Graph::output_for(int out, const std::string& name, const Shape& s, DType dt) {
  if (out < 0) return new_intermediate(name, dt, s);
  const TensorDesc& o = tensor(out);
  GPEN_CHECK(o.shape == s, "output view " + o.name + " has shape " + o.shape.str() + ", op " + name +
                               " produces " + s.str());
  return out;
}

int Graph::add_node(Node n) {
  for (int t : n.inputs) GPEN_CHECK(t < static_cast<int>(tensors_.size()), "node input out of range");
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

void Graph::replace_nodes(std::vector<Node> nodes) {
  const int nt = static_cast<int>(tensors_.size());
  for (const Node& n : nodes) {
    for (int t : n.inputs) GPEN_CHECK(t < nt, "node " + n.name + ": input out of range");
    for (int t : n.outputs) GPEN_CHECK(t >= 0 && t < nt, "node " + n.name + ": output out of range");
  }
  nodes_ = std::move(nodes);
}

int Graph::conv2d(int x, int w, int bias, const Conv2dParams& p, int residual, int out, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  const Shape& ws = tensor(w).shape;
  std::string nm = auto_name(name, "conv2d");
  GPEN_CHECK(xs.rank == 4, nm + ": input must be NHWC, got " + xs.str());
  GPEN_CHECK(ws.rank == 4 && ws[0] == p.kh && ws[1] == p.kw, nm + ": weight must be HWIO " +
                                                                  std::to_string(p.kh) + "x" + std::to_string(p.kw) +
                                                                  ", got " + ws.str());
  GPEN_CHECK(p.groups >= 1 && xs[3] % p.groups == 0 && ws[2] == xs[3] / p.groups,
             nm + ": weight " + ws.str() + " does not fit input channels " + std::to_string(xs[3]));
  int64_t ho = (xs[1] + p.pad_top + p.pad_bottom - p.kh) / p.stride_h + 1;
  int64_t wo = (xs[2] + p.pad_left + p.pad_right - p.kw) / p.stride_w + 1;
  GPEN_CHECK(ho > 0 && wo > 0, nm + ": output would be empty for input " + xs.str());
  Conv2dParams q = p;
  q.has_bias = bias >= 0;
  q.has_residual = residual >= 0;
  int y = output_for(out, nm, nhwc(xs[0], ho, wo, ws[3]), act_dtype_);
  add_node({nm, q, {x, w, bias, residual}, {y}});
  return y;
}

int Graph::dense(int x, int w, int bias, const DenseParams& p, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  const Shape& ws = tensor(w).shape;
  std::string nm = auto_name(name, "dense");
  GPEN_CHECK(xs.rank == 2 && ws.rank == 2 && ws[1] == xs[1],
             nm + ": dense of " + xs.str() + " with weight " + ws.str());
  DenseParams q = p;
  q.has_bias = bias >= 0;
  int y = new_intermediate(nm, act_dtype_, Shape{xs[0], ws[0]});
  add_node({nm, q, {x, w, bias}, {y}});
  return y;
}

int Graph::bias_act(int x, int bias, const BiasActParams& p, int out, const std::string& name) {
  std::string nm = auto_name(name, "bias_act");
  BiasActParams q = p;
  q.has_bias = bias >= 0;
  int y = output_for(out, nm, tensor(x).shape, act_dtype_);
  Node n{nm, q, {x, bias}, {y}};
  if (out < 0) n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::add(int a, int b, const AddParams& p, int out, const std::string& name) {
  std::string nm = auto_name(name, "add");
  GPEN_CHECK(tensor(a).shape == tensor(b).shape,
             nm + ": add of " + tensor(a).shape.str() + " and " + tensor(b).shape.str());
  int y = output_for(out, nm, tensor(a).shape, act_dtype_);
  Node n{nm, p, {a, b}, {y}};
  if (out < 0) n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::resize_nearest(int x, int out_h, int out_w, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "resize_nearest");
  GPEN_CHECK(xs.rank == 4 && out_h > 0 && out_w > 0, nm + ": bad resize of " + xs.str());
  int y = new_intermediate(nm, act_dtype_, nhwc(xs[0], out_h, out_w, xs[3]));
  add_node({nm, ResizeNearestParams{out_h, out_w}, {x}, {y}});
  return y;
}

int Graph::upfirdn2d(int x, const UpFirDn2dParams& p, int out, const std::string& name, int out_scale, int bias) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "upfirdn2d");
  GPEN_CHECK(xs.rank == 4, nm + ": input must be NHWC");
  GPEN_CHECK(static_cast<int>(p.kernel.size()) == p.kh * p.kw, nm + ": kernel size mismatch");
  int64_t ho = (xs[1] * p.up_y + p.pad_y0 + p.pad_y1 - p.kh) / p.down_y + 1;
  int64_t wo = (xs[2] * p.up_x + p.pad_x0 + p.pad_x1 - p.kw) / p.down_x + 1;
  GPEN_CHECK(ho > 0 && wo > 0, nm + ": empty output");
  UpFirDn2dParams q = p;
  q.has_out_scale = out_scale >= 0;
  q.has_bias = bias >= 0;
  if (q.has_out_scale)
    GPEN_CHECK(tensor(out_scale).shape == (Shape{xs[0], xs[3]}), nm + ": out_scale must be [N, C]");
  if (q.has_bias) GPEN_CHECK(tensor(bias).shape.numel() == xs[3], nm + ": bias must have C values");
  int y = output_for(out, nm, nhwc(xs[0], ho, wo, xs[3]), act_dtype_);
  add_node({nm, q, {x, out_scale, bias}, {y}});
  return y;
}

int Graph::softmax(int x, const std::string& name) {
  std::string nm = auto_name(name, "softmax");
  int y = new_intermediate(nm, act_dtype_, tensor(x).shape);
  Node n{nm, SoftmaxParams{}, {x}, {y}};
  n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::pixel_unshuffle(int x, int factor, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "pixel_unshuffle");
  GPEN_CHECK(xs.rank == 4, nm + ": input must be NHWC, got " + xs.str());
  GPEN_CHECK(factor >= 1 && factor <= 16, nm + ": factor " + std::to_string(factor) + " out of range 1..16");
  GPEN_CHECK(xs[1] % factor == 0 && xs[2] % factor == 0,
             nm + ": input " + xs.str() + " is not a multiple of the factor " + std::to_string(factor));
  int y = new_intermediate(nm, act_dtype_, nhwc(xs[0], xs[1] / factor, xs[2] / factor, xs[3] * factor * factor));
  add_node({nm, PixelUnshuffleParams{factor}, {x}, {y}});
  return y;
}

int Graph::pad_reflect(int x, const PadReflectParams& p, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "pad_reflect");
  GPEN_CHECK(xs.rank == 4, nm + ": input must be NHWC, got " + xs.str());
  GPEN_CHECK(p.up >= 1 && p.pad >= 0 && p.pad < p.up * xs[1] && p.pad < p.up * xs[2],
             nm + ": reflection pad " + std::to_string(p.pad) + " needs a larger input than " + xs.str());
  int y = new_intermediate(nm, act_dtype_, nhwc(xs[0], p.up * xs[1] + 2 * p.pad, p.up * xs[2] + 2 * p.pad, xs[3]));
  add_node({nm, p, {x}, {y}});
  return y;
}

int Graph::max_pool2d(int x, const MaxPool2dParams& p, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "max_pool2d");
  GPEN_CHECK(xs.rank == 4, nm + ": input must be NHWC, got " + xs.str());
  GPEN_CHECK(p.kh >= 1 && p.kw >= 1 && p.stride_h >= 1 && p.stride_w >= 1 && p.pad_top < p.kh &&
                 p.pad_bottom < p.kh && p.pad_left < p.kw && p.pad_right < p.kw,
             nm + ": bad pooling window");
  int64_t ho = (xs[1] + p.pad_top + p.pad_bottom - p.kh) / p.stride_h + 1;
  int64_t wo = (xs[2] + p.pad_left + p.pad_right - p.kw) / p.stride_w + 1;
  GPEN_CHECK(ho > 0 && wo > 0, nm + ": output would be empty for input " + xs.str());
  int y = new_intermediate(nm, act_dtype_, nhwc(xs[0], ho, wo, xs[3]));
  add_node({nm, p, {x}, {y}});
  return y;
}

int Graph::pixel_norm(int x, const std::string& name) {
  std::string nm = auto_name(name, "pixel_norm");
  int y = new_intermediate(nm, act_dtype_, tensor(x).shape);
  Node n{nm, PixelNormParams{}, {x}, {y}};
  n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::demod(int s, int q, const std::string& name) {
  std::string nm = auto_name(name, "demod");
  const Shape& ss = tensor(s).shape;
  const Shape& qs = tensor(q).shape;
  GPEN_CHECK(ss.rank == 2 && qs.rank == 2 && qs[1] == ss[1],
             nm + ": demod of style " + ss.str() + " with table " + qs.str());
  // The factors take the style's dtype: the kernels that read them want one dtype per call.
  int d = new_intermediate(nm, tensor(s).dtype, Shape{ss[0], qs[0]});
  add_node({nm, DemodParams{}, {s, q}, {d}});
  return d;
}

int Graph::modconv(const ModConvInputs& in, const ModConvParams& p, int out, const std::string& name) {
  std::string nm = auto_name(name, "modconv");
  const Shape& xs = tensor(in.x).shape;
  const Shape& ws = tensor(in.w).shape;
  GPEN_CHECK(xs.rank == 4, nm + ": input must be NHWC, got " + xs.str());
  int64_t cin = xs[3];
  int64_t n = xs[0];
  ModConvParams q = p;
  q.has_x2 = in.x2 >= 0;
  q.has_demod = in.d >= 0;
  q.has_bias = in.bias >= 0;
  q.has_residual = in.residual >= 0;
  if (q.has_x2) {
    const Shape& x2s = tensor(in.x2).shape;
    GPEN_CHECK(x2s.rank == 4 && x2s[1] == xs[1] && x2s[2] == xs[2],
               nm + ": second source " + x2s.str() + " does not match " + xs.str());
    GPEN_CHECK(in.x2_scale >= 0 && in.x2_bias >= 0 && tensor(in.x2_bias).shape.numel() == x2s[3],
               nm + ": second source needs a scale and " + std::to_string(x2s[3]) + " biases");
    cin += x2s[3];
    n = std::max(n, x2s[0]);
  }
  const Shape& ss = tensor(in.s).shape;
  GPEN_CHECK(ss.rank == 2 && ss[1] == cin, nm + ": style " + ss.str() + " for " + std::to_string(cin) + " channels");
  n = std::max(n, ss[0]);
  GPEN_CHECK(xs[0] == n || xs[0] == 1, nm + ": batch of input " + xs.str() + " vs " + std::to_string(n));
  GPEN_CHECK(ws.rank == 4 && ws[0] == p.k && ws[1] == p.k && ws[2] == cin,
             nm + ": weight " + ws.str() + " for " + std::to_string(cin) + " input channels, k=" + std::to_string(p.k));
  int64_t cout = ws[3];
  if (q.has_demod) GPEN_CHECK(tensor(in.d).shape == (Shape{n, cout}), nm + ": demod must be [N, Cout]");
  if (q.has_bias) GPEN_CHECK(tensor(in.bias).shape.numel() == cout, nm + ": bias must have Cout values");
  if (p.up)
    GPEN_CHECK(!q.has_demod && !q.has_bias && !q.has_residual && p.act.is_identity(),
               nm + ": the upsampling conv has no epilogue (the blur after it applies it)");
  GPEN_CHECK(p.crop_top >= 0 && p.crop_bottom >= 0 && p.out_rows(xs[1]) >= 1,
             nm + ": row crop " + std::to_string(p.crop_top) + " / " + std::to_string(p.crop_bottom) + " of " +
                 std::to_string(xs[1]) + " input rows");
  Shape ys = p.up ? nhwc(n, p.out_rows(xs[1]), 2 * (xs[2] - 1) + p.k, cout) : nhwc(n, p.out_rows(xs[1]), xs[2], cout);
  if (q.has_residual) GPEN_CHECK(tensor(in.residual).shape == ys, nm + ": residual must be " + ys.str());
  int y = output_for(out, nm, ys, act_dtype_);
  add_node({nm, q, {in.x, in.x2, in.x2_scale, in.x2_bias, in.w, in.s, in.d, in.bias, in.residual}, {y}});
  return y;
}

std::vector<int> Graph::inputs() const {
  std::vector<int> r;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].kind == TensorKind::Input) r.push_back(static_cast<int>(i));
  return r;
}
std::vector<int> Graph::outputs() const {
  std::vector<int> r;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].is_output) r.push_back(static_cast<int>(i));
  return r;
}

int Graph::root_of(int t) const {
  while (tensors_.at(t).kind == TensorKind::View) t = tensors_[t].base;
  return t;
}
int64_t Graph::offset_in_root(int t) const {
  int64_t off = 0;
  while (tensors_.at(t).kind == TensorKind::View) {
    off += tensors_[t].offset;
    t = tensors_[t].base;
  }
  return off;
}

size_t Graph::weights_bytes() const {
  size_t b = 0;
  for (const auto& t : tensors_)
    if (t.kind == TensorKind::Weight) b += t.bytes();
  return b;
}

}  // namespace gpen
