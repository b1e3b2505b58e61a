#include "converter/fetch/fetch_models.h"

#include <tuple>

namespace gpen::fetch {

// Source: the official README of https://github.com/yangxy/GPEN ("Download RetinaFace model and
// our pre-trained model ... put them into weights/"; also weights/README.md), as of its commit
// 2c73670 (2026-03-10). Every checkpoint there is linked as <this folder>/<name>.pth. The README
// publishes neither sizes nor checksums, so `size` and `sha256` stay empty and a download is
// verified by its layout (every tensor name and shape) unless --sha256 pins it.
const char* const kOfficialBase = "https://public-vigen-video.oss-cn-shanghai.aliyuncs.com/robin/models";

namespace {

Expect gpen_expect(int size, double cm, double narrow) {
  Expect e;
  e.arch = conv::Arch::gpen;
  e.gpen_size = size;
  e.channel_multiplier = cm;
  e.narrow = narrow;
  return e;
}

Expect retina_expect(conv::RetinaBackbone b) {
  Expect e;
  e.arch = conv::Arch::retinaface;
  e.backbone = b;
  return e;
}

// The README's 2023-02-15 news: "GPEN-BFR-1024 and GPEN-BFR-2048 are now publicly available.
// Please download them via [ModelScope2]" (damo/cv_gpen_image-portrait-enhancement-hires), not
// from the folder above; GPEN-BFR-2048 was linked there on 2022-03-09 and taken down a week later.
const char* kHiresNote =
    "the official GPEN README does not link it from the common folder; it points to ModelScope "
    "(https://www.modelscope.cn/models/damo/cv_gpen_image-portrait-enhancement-hires) instead. "
    "Pass --base-url of a mirror that holds NAME.pth";

std::vector<ModelInfo> make_table() {
  std::vector<ModelInfo> t;
  // GPEN-BFR-256 is the narrow model (channel multiplier 1, narrow 0.5), as in GPEN's run.sh.
  t.push_back({"GPEN-BFR-256", true, true, "", gpen_expect(256, 1, 0.5), 0, ""});
  t.push_back({"GPEN-BFR-512", true, true, "", gpen_expect(512, 2, 1), 0, ""});
  t.push_back({"GPEN-BFR-1024", false, true, kHiresNote, gpen_expect(1024, 0, 0), 0, ""});
  // GPEN's run.sh runs GPEN-BFR-2048 with --channel_multiplier 2 --narrow 1.
  t.push_back({"GPEN-BFR-2048", false, true, kHiresNote, gpen_expect(2048, 2, 1), 0, ""});
  // The task models, in the common folder: demo.py builds them with FaceColorization /
  // FaceInpainting / Segmentation2Face defaults (channel multiplier 2, narrow 1) and the README's
  // --in_size 1024 / 1024 / 512, no out_size: FullGenerator layouts.
  t.push_back({"GPEN-Colorization-1024", true, true, "", gpen_expect(1024, 2, 1), 0, ""});
  t.push_back({"GPEN-Inpainting-1024", true, true, "", gpen_expect(1024, 2, 1), 0, ""});
  t.push_back({"GPEN-Seg2face-512", true, true, "", gpen_expect(512, 2, 1), 0, ""});
  t.push_back({"RetinaFace-R50", true, true, "", retina_expect(conv::RetinaBackbone::resnet50), 0, ""});
  Expect parse;
  parse.arch = conv::Arch::parsenet;  // one fixed layout: recognising it checks every tensor
  t.push_back({"ParseNet-latest", true, true, "", parse, 0, ""});
  // RealESRNet as GPEN's face_model/realesrnet.py builds it: RRDBNet(3, 3, 32, 23, 32, scale).
  for (int s : {1, 2, 4}) {
    Expect e;
    e.arch = conv::Arch::realesrnet;
    e.sr_scale = s;
    t.push_back({"realesrnet_x" + std::to_string(s), true, true, "", e, 0, ""});
  }
  // GFPGAN's clean models, from the links of the official README (TencentARC/GFPGAN, "Model zoo"):
  // GFPGANer(arch='clean', channel_multiplier=2) builds each as the default GfpganConfig.
  Expect gfp;
  gfp.arch = conv::Arch::gfpgan;
  const char* const kGfpganReleases = "https://github.com/TencentARC/GFPGAN/releases/download/";
  for (const auto& [name, release] : {std::pair<const char*, const char*>{"GFPGANv1.4", "v1.3.0"},
                                      {"GFPGANv1.3", "v1.3.0"},
                                      {"GFPGANCleanv1-NoCE-C2", "v0.2.0"}}) {
    ModelInfo m{name, true, true, "", gfp, 0, ""};
    m.url = std::string(kGfpganReleases) + release + "/" + name + ".pth";
    t.push_back(m);
  }
  // RealESRGAN, the background upsampler of GFPGAN's and CodeFormer's scripts: RRDBNet(3, 3, 64, 23,
  // 32, scale). x2plus from the link inference_codeformer.py downloads, x4plus from Real-ESRGAN's
  // README (release v0.1.0).
  for (const auto& [name, scale, url] :
       {std::tuple<const char*, int, const char*>{
            "RealESRGAN_x2plus", 2, "https://github.com/sczhou/CodeFormer/releases/download/v0.1.0/RealESRGAN_x2plus.pth"},
        {"RealESRGAN_x4plus", 4, "https://github.com/xinntao/Real-ESRGAN/releases/download/v0.1.0/RealESRGAN_x4plus.pth"}}) {
    Expect e;
    e.arch = conv::Arch::realesrnet;
    e.sr_scale = scale;
    e.sr_feat = 64;
    ModelInfo m{name, true, true, "", e, 0, ""};
    m.url = url;
    t.push_back(m);
  }
  // CodeFormer, from the link inference_codeformer.py downloads (sczhou/CodeFormer, release
  // v0.1.0): the released configuration, CodeFormer() with dim_embd 512, 9 layers, 1024 codes.
  Expect cf;
  cf.arch = conv::Arch::codeformer;
  ModelInfo codeformer{"CodeFormer", true, true, "", cf, 0, ""};
  codeformer.url = "https://github.com/sczhou/CodeFormer/releases/download/v0.1.0/codeformer.pth";
  t.push_back(codeformer);
  // RestoreFormer++ and RestoreFormer, from the links the official inference.py downloads
  // (wzhouxiff/RestoreFormerPlusPlus, release v1.0.0; its README links a Google Drive folder).
  Expect rf;
  rf.arch = conv::Arch::restoreformer;
  for (const char* name : {"RestoreFormer++", "RestoreFormer"}) {
    ModelInfo m{name, true, true, "", rf, 0, ""};
    m.url = std::string("https://github.com/wzhouxiff/RestoreFormerPlusPlus/releases/download/v1.0.0/") + name + ".ckpt";
    t.push_back(m);
  }
  // facexlib's face parser, the one GFPGANer and CodeFormer's facelib paste with (xinntao/facexlib,
  // release v0.2.2): GPEN's ParseNet layout.
  ModelInfo facexlib_parse{"parsing_parsenet", true, true, "", parse, 0, ""};
  facexlib_parse.url = "https://github.com/xinntao/facexlib/releases/download/v0.2.2/parsing_parsenet.pth";
  t.push_back(facexlib_parse);
  return t;
}

}  // namespace

const std::vector<ModelInfo>& models() {
  static const std::vector<ModelInfo> t = make_table();
  return t;
}

const ModelInfo* find_model(const std::string& name) {
  for (const auto& m : models())
    if (m.name == name) return &m;
  return nullptr;
}

std::string model_task(const std::string& name) {
  if (name == "GPEN-Colorization-1024") return "colorize";
  if (name == "GPEN-Inpainting-1024") return "inpaint";
  if (name == "GPEN-Seg2face-512") return "seg2face";
  return "";
}

std::string model_names() {
  std::string s;
  for (const auto& m : models()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

std::string describe(const Expect& e) {
  if (e.arch == conv::Arch::retinaface) return std::string("RetinaFace ") + conv::backbone_name(e.backbone);
  if (e.arch == conv::Arch::realesrnet)
    return std::string(e.sr_feat == 64 ? "RealESRGAN x" : "RealESRNet x") + std::to_string(e.sr_scale) + " (RRDBNet, " +
           std::to_string(e.sr_feat) + " features, 23 blocks)";
  if (e.arch == conv::Arch::parsenet) return "ParseNet (face parsing, 19 classes)";
  if (e.arch == conv::Arch::gfpgan)
    return "GFPGANv1Clean 512x512 (channel multiplier 2, different_w, sft_half)";
  if (e.arch == conv::Arch::codeformer) return "CodeFormer 512x512 (dim_embd 512, 9 layers, 1024 codes)";
  if (e.arch == conv::Arch::restoreformer) return "RestoreFormer 512x512 (VQVAE with multi-head cross-attention)";
  if (e.arch != conv::Arch::gpen) return "a model the converter does not know";
  auto num = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  std::string s = "GPEN " + std::to_string(e.gpen_size) + "x" + std::to_string(e.gpen_size);
  if (e.channel_multiplier > 0) s += ", channel multiplier " + num(e.channel_multiplier);
  if (e.narrow > 0) s += ", narrow " + num(e.narrow);
  return s;
}

}  // namespace gpen::fetch
