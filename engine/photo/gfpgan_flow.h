#pragma once
// GFPGAN's photo flow, as GFPGANer.enhance runs it with facexlib's FaceRestoreHelper and no
// background upsampler: detection (RetinaFace, score > 0.97 on the photo as it is, faces whose
// eyes are under 5 pixels apart skipped, optionally only the face nearest the centre), alignment
// onto the 512 FFHQ template (facexlib_align.h), the network (BGR -> RGB, / 255, normalised by
// 0.5; its output clamped to [-1, 1], mapped to [0, 255] and rounded as basicsr's tensor2img),
// the optional blend with the aligned crop, and the paste-back (facexlib_paste.h) onto the photo
// resized by the upscale (Lanczos, as cv2.resize INTER_LANCZOS4). GPEN's flow is pipeline.h.
// Its aligned mode (has_aligned=True) takes a face crop that is already aligned: resized to the
// network's size (cv2.resize INTER_LINEAR), the network, the restored face itself.
#include <vector>

#include "engine/models/gfpgan.h"
#include "engine/models/retinaface.h"
#include "engine/photo/pipeline.h"

namespace gpen {

struct GfpganFlowOptions {
  float threshold = 0.97f;        // facexlib's detect_faces(img, 0.97)
  float eye_dist_threshold = 5;   // GFPGANer.enhance's eye_dist_threshold
  bool only_center_face = false;  // keep only the detection nearest the photo's centre
  int upscale = 1;                // output size = photo size * upscale
  double blend = 1.0;             // restored * blend + aligned crop * (1 - blend), before the paste
};

// The faces of a photo facexlib restores, in detection order: those scoring above the threshold
// (as detected), whose eyes are at least eye_dist_threshold apart, and with only_center_face the
// one nearest the centre. Indices into `faces`.
std::vector<size_t> facexlib_faces(const std::vector<Face>& faces, int width, int height, const GfpganFlowOptions& o);

// The network's input of an aligned BGR crop (S x S): RGB NHWC, float32(v / 255.0) then
// (x - 0.5) / 0.5 in float32, as img2tensor and torchvision's normalize compute it.
void gfpgan_input(const Image& crop, float* nhwc_rgb);
// tensor2img(out, rgb2bgr=True, min_max=(-1, 1)): clamp, (x + 1) / 2, * 255, rounded half to even.
Image gfpgan_output(const float* nhwc_rgb, int size);

// GFPGANer.enhance(face, has_aligned=True): the crop resized to the network's size with
// cv2.resize's INTER_LINEAR (8-bit), the network, the output as tensor2img makes it; blend < 1
// mixes it with the resized crop (restored * blend + crop * (1 - blend)). `in` and `out` hold
// S * S * 3 floats each (grown when smaller).
Image gfpgan_restore_aligned(GfpganModel& net, ImageView face, double blend, std::vector<float>& in,
                             std::vector<float>& out);

class GfpganRestorer {
 public:
  GfpganRestorer(GfpganModel& net, RetinaFaceDetector& detector, const GfpganFlowOptions& opt);
  PhotoResult process(ImageView photo);
  // An aligned face crop of any size (gfpgan_restore_aligned with the options' blend).
  Image restore_aligned(ImageView face);
  const GfpganFlowOptions& options() const { return opt_; }

 private:
  GfpganModel& net_;
  RetinaFaceDetector& det_;
  GfpganFlowOptions opt_;
  std::vector<float> in_, out_;
};

}  // namespace gpen
