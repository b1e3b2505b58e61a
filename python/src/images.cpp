// imread / imdecode / imwrite / imencode with the engine's own codecs, so that a Python run writes
// the bytes `gpen restore` writes. ImageMeta carries EXIF and ICC from a read to a write, as the
// CLI does for every output.
#include <cstring>
#include <string>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "engine/core/error.h"
#include "engine/photo/image.h"
#include "python/src/bindings.h"

namespace gpen::py {

ImageView view_of(const ImageIn& a) {
  // A wrong array is the caller's value, not an engine failure: ValueError.
  if (a.shape(2) != 3)
    throw nb::value_error(("expected an H x W x 3 uint8 BGR image, got " + std::to_string(a.shape(2)) + " channels").c_str());
  if (a.shape(0) == 0 || a.shape(1) == 0 || a.shape(0) > size_t(kMaxImageSide) || a.shape(1) > size_t(kMaxImageSide) ||
      int64_t(a.shape(0) * a.shape(1)) > kMaxImagePixels)
    throw nb::value_error(("image of " + std::to_string(a.shape(1)) + " x " + std::to_string(a.shape(0)) +
                           " pixels: each side must be 1.." + std::to_string(kMaxImageSide) + ", at most " +
                           std::to_string(kMaxImagePixels) + " pixels")
                              .c_str());
  ImageView v;
  v.height = static_cast<int>(a.shape(0));
  v.width = static_cast<int>(a.shape(1));
  v.bgr = {a.data(), v.pixels() * 3};
  return v;
}

ImageOut to_array(Image&& img) {
  auto* held = new Image(std::move(img));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<Image*>(p); });
  return ImageOut(held->bgr.data(), {size_t(held->height), size_t(held->width), size_t(3)}, owner);
}

namespace {

ReadOptions read_opts(std::optional<int64_t> max_pixels, bool ignore_orientation) {
  ReadOptions o;
  if (max_pixels) {
    GPEN_CHECK(*max_pixels > 0 && *max_pixels <= kMaxImagePixels,
               "max_pixels must be 1.." + std::to_string(kMaxImagePixels));
    o.max_pixels = *max_pixels;
  }
  o.apply_orientation = !ignore_orientation;
  return o;
}

nb::object with_meta(Image&& img, ImageMeta&& meta, bool want) {
  ImageOut a = to_array(std::move(img));
  if (!want) return nb::cast(a);
  return nb::make_tuple(a, std::move(meta));
}

}  // namespace

void register_images(nb::module_& m) {
  nb::class_<ImageMeta>(m, "ImageMeta", "EXIF and ICC profile of a decoded photo, for the written one")
      .def(nb::init<>())
      .def_prop_ro("exif", [](const ImageMeta& x) { return nb::bytes(x.exif.data(), x.exif.size()); })
      .def_prop_ro("icc", [](const ImageMeta& x) { return nb::bytes(x.icc.data(), x.icc.size()); })
      .def_ro("orientation", &ImageMeta::orientation);

  m.def(
      "imread",
      [](const std::string& path, bool meta, std::optional<int64_t> max_pixels, bool ignore_orientation) {
        ImageMeta md;
        Image img;
        {
          nb::gil_scoped_release unlocked;
          img = read_image(path, read_opts(max_pixels, ignore_orientation), &md);
        }
        return with_meta(std::move(img), std::move(md), meta);
      },
      nb::arg("path"), nb::kw_only(), nb::arg("meta") = false, nb::arg("max_pixels") = nb::none(),
      nb::arg("ignore_orientation") = false);
  m.def(
      "imdecode",
      [](nb::bytes data, const std::string& name, bool meta, std::optional<int64_t> max_pixels,
         bool ignore_orientation) {
        ImageMeta md;
        Image img;
        {
          nb::gil_scoped_release unlocked;  // bytes are immutable: safe to read unlocked
          img = decode_image(static_cast<const uint8_t*>(data.data()), data.size(), name,
                             read_opts(max_pixels, ignore_orientation), &md);
        }
        return with_meta(std::move(img), std::move(md), meta);
      },
      nb::arg("data"), nb::arg("name") = "<bytes>", nb::kw_only(), nb::arg("meta") = false,
      nb::arg("max_pixels") = nb::none(), nb::arg("ignore_orientation") = false);
  m.def(
      "imwrite",
      [](const std::string& path, const ImageIn& a, int quality, const ImageMeta* meta) {
        GPEN_CHECK(quality >= 1 && quality <= 100, "jpeg quality must be 1..100");
        ImageView img = view_of(a);
        nb::gil_scoped_release unlocked;
        write_image(path, img, quality, meta);
      },
      nb::arg("path"), nb::arg("image"), nb::kw_only(), nb::arg("quality") = 95, nb::arg("meta") = nb::none());
  m.def(
      "imencode",
      [](const std::string& ext, const ImageIn& a, int quality, const ImageMeta* meta) {
        GPEN_CHECK(quality >= 1 && quality <= 100, "jpeg quality must be 1..100");
        ImageView img = view_of(a);
        std::vector<uint8_t> bytes;
        {
          nb::gil_scoped_release unlocked;
          // ".png" as cv2.imencode takes it, or "png".
          bytes = encode_image(!ext.empty() && ext[0] == '.' ? ext.substr(1) : ext, img, quality, meta);
        }
        return nb::bytes(bytes.data(), bytes.size());
      },
      nb::arg("ext"), nb::arg("image"), nb::kw_only(), nb::arg("quality") = 95, nb::arg("meta") = nb::none());
}

}  // namespace gpen::py
