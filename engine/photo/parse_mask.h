#pragma once
// The face-parsing paste mask of the official flow (FaceEnhancement.process since December 2021,
// gpen-semantics.md "Face parsing mask"): FaceParse.process on the raw GPEN output, then
// mask_postprocess and the resize to the crop size. The rectangle mask (paste.h) is its fallback.
#include <cstdint>
#include <vector>

#include "engine/models/parsenet.h"
#include "engine/photo/image.h"

namespace gpen {

// FaceParse.process's input: the face (S x S BGR) resized to 512 x 512 as cv2.resize does
// (a copy at 512, OpenCV's 2 x 2 mean at 1024, 8-bit bilinear otherwise), then
// RGB / 255 * 2 - 1 computed in double and rounded to float: 512 * 512 * 3 floats, NHWC.
void parse_input(const Image& face, float* nhwc_rgb);

// FaceParse.process: the 512 x 512 keep (255) / drop (0) mask of MASK_COLORMAP.
std::vector<uint8_t> face_parse(ParseNetModel& net, const Image& face);

// mask_postprocess(mask / 255., thres 26): rows and columns within 26 pixels of the border set
// to 0, cv2.GaussianBlur 101 x 101 sigma 4 (BORDER_REFLECT_101) twice in float64, cast to float32;
// then cv2.resize to size x size as the rectangle mask is (paste.h: resize_paste_mask).
// `mask512` holds 512 * 512 bytes. gpen::Error for another length or a size outside
// 1..kMaxFaceSize.
std::vector<float> parse_paste_mask(const std::vector<uint8_t>& mask512, int size);

// facexlib's (and CodeFormer's facelib's) parsing mask of paste_faces_to_input_image, from
// ParseNet's 512 x 512 labels of the restored face: their MASK_COLORMAP (labels 0, 14, 16, 17, 18
// -> 0, the others -> 255) in float64, cv2.GaussianBlur 101 x 101 sigma 11 twice, rows and columns
// within 10 pixels of the border set to 0, / 255. (ParseNet's input there is the restored face as
// float32 / 255 in float32, then (x - 0.5) / 0.5: facexlib_flow.cpp.) gpen::Error for another length.
std::vector<double> facexlib_parse_mask(const std::vector<uint8_t>& labels512);

}  // namespace gpen
