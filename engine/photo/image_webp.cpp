// WebP through libwebp's simple API, as OpenCV 4.6's decoder (grfmt_webp.cpp) uses it: straight
// to BGR, alpha dropped; EXIF and ICC chunks read with the demuxer and written with the muxer.
// OpenCV does not apply a WebP file's EXIF orientation, so neither does this decoder.
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

#include <cstring>

#include "engine/core/error.h"
#include "engine/photo/image_codecs.h"

namespace gpen::codec {

namespace {

void read_chunk(WebPDemuxer* dmux, const char* fourcc, std::vector<uint8_t>& out) {
  WebPChunkIterator it;
  if (WebPDemuxGetChunk(dmux, fourcc, 1, &it)) {
    const uint8_t* p = it.chunk.bytes;
    size_t n = it.chunk.size;
    // Some writers keep JPEG's "Exif\0\0" in front of the TIFF structure.
    if (std::strcmp(fourcc, "EXIF") == 0 && n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) {
      p += 6;
      n -= 6;
    }
    out.assign(p, p + n);
    WebPDemuxReleaseChunkIterator(&it);
  }
}

}  // namespace

Image decode_webp(const uint8_t* data, size_t size, const std::string& name, const ReadOptions& opt, ImageMeta* meta) {
  WebPBitstreamFeatures f;
  const VP8StatusCode st = WebPGetFeatures(data, size, &f);
  GPEN_CHECK(st != VP8_STATUS_NOT_ENOUGH_DATA, name + ": truncated WebP (header incomplete)");
  GPEN_CHECK(st == VP8_STATUS_OK, name + ": corrupt WebP (libwebp status " + std::to_string(static_cast<int>(st)) + ")");
  GPEN_CHECK(!f.has_animation, name + ": animated WebP is not supported");
  check_size(f.width, f.height, name, opt);
  Image img;
  img.width = f.width;
  img.height = f.height;
  img.bgr.resize(img.pixels() * 3);
  // WebPDecodeBGRInto's path (default options: fancy upsampling), but with the status kept to
  // tell truncation from corruption.
  WebPDecoderConfig cfg;
  GPEN_CHECK(WebPInitDecoderConfig(&cfg), name + ": libwebp version mismatch");
  cfg.output.colorspace = MODE_BGR;
  cfg.output.is_external_memory = 1;
  cfg.output.u.RGBA.rgba = img.bgr.data();
  cfg.output.u.RGBA.stride = img.width * 3;
  cfg.output.u.RGBA.size = img.bgr.size();
  const VP8StatusCode ds = WebPDecode(data, size, &cfg);
  WebPFreeDecBuffer(&cfg.output);
  GPEN_CHECK(ds != VP8_STATUS_NOT_ENOUGH_DATA, name + ": truncated WebP (libwebp: not enough data)");
  GPEN_CHECK(ds == VP8_STATUS_OK, name + ": corrupt WebP (libwebp status " + std::to_string(static_cast<int>(ds)) + ")");
  WebPData wd{data, size};
  if (WebPDemuxer* dmux = WebPDemux(&wd)) {
    read_chunk(dmux, "EXIF", meta->exif);
    read_chunk(dmux, "ICCP", meta->icc);
    WebPDemuxDelete(dmux);
  }
  return img;
}

std::vector<uint8_t> encode_webp(ImageView img, int, const std::vector<uint8_t>& exif,
                                 const std::vector<uint8_t>& icc) {
  GPEN_CHECK(img.width <= WEBP_MAX_DIMENSION && img.height <= WEBP_MAX_DIMENSION,
             "WebP holds at most " + std::to_string(WEBP_MAX_DIMENSION) + " pixels a side");
  uint8_t* bits = nullptr;
  // Lossless, as cv2.imwrite writes WebP without a quality parameter: a restored photo loses nothing.
  const size_t n = WebPEncodeLosslessBGR(img.bgr.data(), img.width, img.height, img.width * 3, &bits);
  GPEN_CHECK(n > 0 && bits, "WebP encoding failed");
  std::vector<uint8_t> out(bits, bits + n);
  WebPFree(bits);
  if (exif.empty() && icc.empty()) return out;
  WebPData in{out.data(), out.size()};
  WebPMux* mux = WebPMuxCreate(&in, 0);
  GPEN_CHECK(mux, "WebP encoding failed (muxer)");
  bool ok = true;
  if (!exif.empty()) {
    WebPData e{exif.data(), exif.size()};
    ok = ok && WebPMuxSetChunk(mux, "EXIF", &e, 0) == WEBP_MUX_OK;
  }
  if (!icc.empty()) {
    WebPData c{icc.data(), icc.size()};
    ok = ok && WebPMuxSetChunk(mux, "ICCP", &c, 0) == WEBP_MUX_OK;
  }
  WebPData assembled{nullptr, 0};
  ok = ok && WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK;
  WebPMuxDelete(mux);
  if (ok) out.assign(assembled.bytes, assembled.bytes + assembled.size);
  WebPDataClear(&assembled);
  GPEN_CHECK(ok, "WebP encoding failed (muxer)");
  return out;
}

}  // namespace gpen::codec
