#pragma once
// The checkpoints `gpen fetch` knows by name: where the official GPEN (and GFPGAN) projects publish each one,
// and what the downloaded file must be (architecture and configuration the converter recognises,
// size and sha256 where known).
#include <cstdint>
#include <string>
#include <vector>

#include "converter/layouts.h"

namespace gpen::fetch {

// The folder the official GPEN README links every released checkpoint from.
extern const char* const kOfficialBase;

// What a downloaded file has to be: checked with the converter's recognition of the state dict.
struct Expect {
  conv::Arch arch = conv::Arch::unknown;
  int gpen_size = 0;                                           // GPEN: output resolution
  double channel_multiplier = 0, narrow = 0;                   // GPEN: 0 = not checked
  conv::RetinaBackbone backbone = conv::RetinaBackbone::resnet50;  // RetinaFace
  int sr_scale = 0;                                                 // RealESRNet: 1, 2 or 4
  int sr_feat = 32;                                                 // RRDBNet's width (RealESRGAN: 64)
};

struct ModelInfo {
  std::string name;     // what the user types: "GPEN-BFR-512"
  bool at_base = true;  // published as kOfficialBase/<name>.pth; false: only with --base-url
  bool supported = true;  // the converter recognises its layout (else fetch refuses it by name)
  std::string note;     // shown when the model cannot be fetched from the official base
  Expect expect;
  uint64_t size = 0;    // bytes; 0 = not published
  std::string sha256;   // lower-case hex; "" = not published (verified by layout, or --sha256)
  // Where it is published when not under kOfficialBase (GFPGAN: TencentARC's GitHub releases);
  // "" = kOfficialBase/<name>.pth. --base-url still replaces the folder.
  std::string url = {};

  std::string file() const { return name + ".pth"; }
};

const std::vector<ModelInfo>& models();
// nullptr when the name is unknown.
const ModelInfo* find_model(const std::string& name);
// "GPEN-BFR-256, GPEN-BFR-512, ..." for help texts and errors.
std::string model_names();
// The task an official GPEN model was released for ("colorize" for GPEN-Colorization-1024, ...;
// "" for the BFR models and the others), recorded in the .gpw by `gpen fetch --convert`.
std::string model_task(const std::string& name);
// "GPEN, 512x512, channel multiplier 2, narrow 1" / "RetinaFace resnet50".
std::string describe(const Expect& e);

}  // namespace gpen::fetch
