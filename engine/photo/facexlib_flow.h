#pragma once
// The photo flow of the facexlib family: GFPGANer.enhance with facexlib's FaceRestoreHelper (GFPGAN;
// RestoreFormer.enhance is the same with RestoreFormer++ or RestoreFormer as the network) and
// inference_codeformer.py with the copy of that helper in CodeFormer's facelib (CodeFormer).
// Both: detection (RetinaFace), faces whose eyes are under 5 pixels apart skipped, optionally only
// the face nearest the centre, alignment onto the 512 FFHQ template (facexlib_align.h), the
// network (BGR -> RGB, / 255, normalised by 0.5; its output clamped to [-1, 1], mapped to [0, 255]
// and rounded as basicsr's tensor2img), the optional blend with the aligned crop, and the
// paste-back (facexlib_paste.h), through the face-parsing mask when a parser is given, onto the
// photo resized by the upscale, or onto its super-resolution when a background upsampler is given
// (RealESRGANer.enhance(img, outscale=upscale): super_resolution.h's tile_process with the exact
// crop, Lanczos to the upscale where the model's scale differs). CodeFormer's --face_upsample runs
// each restored face through that upsampler too before its paste. Where the two helpers differ is
// one row of FacexlibRules.
// Their aligned mode (has_aligned=True) takes a face crop that is already aligned: resized to 512
// (cv2.resize INTER_LINEAR), the network, the restored face itself. GPEN's flow is pipeline.h.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/models/codeformer.h"
#include "engine/models/gfpgan.h"
#include "engine/models/parsenet.h"
#include "engine/models/restoreformer.h"
#include "engine/models/retinaface.h"
#include "engine/models/rrdbnet.h"
#include "engine/photo/face_flow.h"
#include "engine/photo/facexlib_paste.h"
#include "engine/photo/pipeline.h"
#include "engine/photo/super_resolution.h"

namespace gpen {

constexpr int kFacexlibFaceSize = 512;  // the FFHQ template's size, both networks' input and output

enum class FacexlibHelper { gfpgan, codeformer };

// What each helper does its own way.
struct FacexlibRules {
  const char* name;
  float threshold;          // detect_faces' score threshold (GFPGANer: 0.97; CodeFormer: its default 0.8)
  int upsize_below;         // read_image: a photo whose shorter side is under this is first scaled
                            // up to it (cv2.resize fx = fy, bilinear); 0: never
  int detect_resize;        // get_face_landmarks_5(resize=): the photo scaled up (never down) so its
                            // shorter side is this for detection (bilinear); 0: detected as it is
  bool misindexed_eyes;     // CodeFormer's eye distance reads bbox[6..9] (l0y - l1y, l1x - l2x)
  bool gray_transfer;       // a gray photo's restored faces made gray with the crop's statistics (adain_npy)
  bool linear_background;   // the photo resized to the output bilinear (else Lanczos, as facexlib)
  FacexlibPaste paste;
  int bg_tile_pad;          // the scripts' RealESRGANer tile_pad (inference_gfpgan.py 10, inference_codeformer.py 40)
};
const FacexlibRules& facexlib_rules(FacexlibHelper h);
// The helper a facexlib flow's model runs with (GFPGAN, RestoreFormer: facexlib's; CodeFormer: its
// facelib's).
inline FacexlibHelper facexlib_helper(FaceFlow f) {
  return f == FaceFlow::codeformer ? FacexlibHelper::codeformer : FacexlibHelper::gfpgan;
}

struct FacexlibFlowOptions {
  FacexlibHelper helper = FacexlibHelper::gfpgan;
  float threshold = 0;            // 0: the helper's
  float eye_dist_threshold = 5;   // the flows' eye_dist_threshold
  bool only_center_face = false;  // keep only the detection nearest the photo's centre
  int upscale = 1;                // output size = photo size * upscale
  double blend = 1.0;             // restored * blend + aligned crop * (1 - blend), before the paste
  // The background upsampler (RealESRGAN, an RrdbModel; null: none) and its tile (the scripts'
  // --bg_tile, 400; 0: untiled).
  RrdbModel* background = nullptr;
  int background_tile = 400;
  // CodeFormer's face_upsampler (inference_codeformer.py --face_upsample, needs `background`): each
  // restored face through the background upsampler at outscale = upscale before the paste, pasted
  // from that size (facexlib_face_upsample_inverse) with its masks at that size.
  bool face_upsample = false;
};

// One 512 x 512 face through the network: in and out [512, 512, 3] RGB in [-1, 1] (host).
using FaceNet = std::function<void(const float* in, float* out)>;

// A GFPGAN, CodeFormer or RestoreFormer .gpw opened on `backend` as the flow's network (CodeFormer
// at fidelity w) in `precision` (fp32 when not given; fp16 / bf16 on a device only). gpen::Error
// naming the file for a GFPGAN model whose size is not 512.
struct FacexlibNet {
  std::unique_ptr<GfpganModel> gfpgan;
  std::unique_ptr<CodeformerModel> codeformer;
  std::unique_ptr<RestoreformerModel> restoreformer;
  FaceNet run;
  size_t weights_bytes() const;
  const MemoryPlan& plan(float w) const;  // one face's
};
std::unique_ptr<FacexlibNet> open_facexlib_net(const std::string& path, FaceFlow flow, Backend& backend, float w,
                                               std::optional<DType> precision = std::nullopt);

// The faces of a photo the helper restores, in detection order: those scoring above the threshold
// (as detected), whose eyes are at least eye_dist_threshold apart, and with only_center_face the
// one nearest the centre. Indices into `faces`.
std::vector<size_t> facexlib_faces(const std::vector<Face>& faces, int width, int height, const FacexlibFlowOptions& o);

// The network's input of an aligned BGR crop (S x S): RGB NHWC, float32(v / 255.0) then
// (x - 0.5) / 0.5 in float32, as img2tensor and torchvision's normalize compute it.
void facexlib_input(const Image& crop, float* nhwc_rgb);
// tensor2img(out, rgb2bgr=True, min_max=(-1, 1)): clamp, (x + 1) / 2, * 255, rounded half to even.
Image facexlib_output(const float* nhwc_rgb, int size);

// CodeFormer's is_gray(img, threshold=10): the mean of the variances of the three channel
// differences at most 10.
bool is_gray_photo(ImageView img);

// RealESRGANer.enhance(img, outscale): the super-resolution of the photo (tiles of `tile` with
// `tile_pad` of context, the exact crop), Lanczos-resized to outscale x its size where the model's
// scale differs.
Image realesrgan_enhance(RrdbModel& model, ImageView img, int outscale, int tile, int tile_pad,
                         SrReport* report = nullptr);

class FacexlibRestorer {
 public:
  // `parser`: the face-parsing paste mask (null: the eroded square); `detector` null: aligned
  // faces only. The network's size is 512.
  FacexlibRestorer(FaceNet net, RetinaFaceDetector* detector, ParseNetModel* parser, const FacexlibFlowOptions& opt);
  // `bg_report`, when not null, gets the background upsampler's report.
  PhotoResult process(ImageView photo, SrReport* bg_report = nullptr);
  // An aligned face crop of any size (has_aligned=True), blended by the options' blend.
  Image restore_aligned(ImageView face);
  const FacexlibFlowOptions& options() const { return opt_; }
  const FacexlibRules& rules() const { return rules_; }
  // The output size of a width x height photo (the helper's upsizing, times the upscale).
  std::pair<int, int> output_size(int width, int height) const;

 private:
  Image run_net(const Image& crop);
  FaceNet net_;
  RetinaFaceDetector* det_;
  ParseNetModel* parser_;
  FacexlibFlowOptions opt_;
  const FacexlibRules& rules_;
  std::vector<float> in_, out_;
};

}  // namespace gpen
