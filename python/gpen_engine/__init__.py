"""gpen-engine for Python: the engine's GPEN face restoration of photos and videos, RetinaFace
detection, memory planner, converter and image codecs (docs/python.md).

Images are H x W x 3 uint8 BGR numpy arrays, as cv2.imread returns them; imread/imwrite use the
engine's own codecs, so a Python run writes the bytes `gpen restore` writes.
"""
import json as _json

from . import _gpen
from ._gpen import (  # noqa: F401
    Detector,
    Error,
    ImageMeta,
    Restorer,
    cuda_compiled_in,
    imdecode,
    imencode,
    imread,
    imwrite,
)

__version__ = _gpen.__version__
__all__ = ["Restorer", "Detector", "Error", "ImageMeta", "plan", "info", "convert", "imread", "imdecode",
           "imwrite", "imencode", "cuda_compiled_in", "output_name", "is_image_name", "is_video_name", "has_video"]

_IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".webp", ".bmp")
# The files `gpen video` takes from a folder (apps/cmd_video.cpp).
_VIDEO_EXTS = (".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ts", ".mts", ".m2ts", ".mpg", ".mpeg", ".flv",
               ".wmv", ".ogv", ".3gp", ".y4m")


def plan(model=None, *, arch="gpen", size=512, batch=1, precision="fp32", device="cpu", strategy=None,
         pipeline=False, input_size="1000x750", channel_multiplier=2, narrow=1.0, sizes=(), batches=(),
         precisions=(), max_batch_for=None, remat=False, reorder=False, remat_max_flops=2.0, tensors=False,
         official=False, sweep=False):
    """The memory plan, as the dictionary `gpen plan --json` prints for the same options
    (`model`: a converted .gpw whose configuration is used, like -m). `input_size`: "WxH" or (w, h)."""
    if not isinstance(input_size, str):
        input_size = "%dx%d" % tuple(input_size)
    return _json.loads(_gpen._plan(
        model=None if model is None else str(model), arch=arch, size=size, sizes=list(sizes), batch=batch,
        batches=list(batches), precision=precision, precisions=list(precisions), device=device, strategy=strategy,
        pipeline=pipeline, input_size=input_size, channel_multiplier=channel_multiplier, narrow=narrow,
        max_batch_for=None if max_batch_for is None else str(max_batch_for), remat=remat, reorder=reorder,
        remat_max_flops=remat_max_flops, tensors=tensors, official=official, sweep=sweep))


def info(path, *, tensors=False):
    """What `gpen info --json` reports for a .gpw, .pth or .safetensors file."""
    return _json.loads(_gpen._info(str(path), tensors))


def convert(input, output, *, arch="auto", key=None, dtype="fp32", task=None, dense_dtype="fp32",
            dense_layers="modulation", group_size=0):
    """Checkpoint (.pth or .safetensors) -> .gpw, written atomically, as `gpen convert` with the
    options of the same names (--dtype, --task, --dense-dtype, --dense-layers, --group-size);
    returns what was written (architecture, configuration, tensors, bytes)."""
    return _json.loads(_gpen._convert(str(input), str(output), arch, key, dtype, task, dense_dtype, dense_layers,
                                      int(group_size)))


def output_name(relative_path):
    """The name `gpen restore IN_DIR -o OUT_DIR` gives the output of IN_DIR/relative_path
    (the same relative path; .bmp becomes .png, since BMP is read but not written)."""
    p = str(relative_path)
    if p.lower().endswith(".bmp"):
        p = p[:-4] + ".png"
    return p


def is_image_name(path):
    """Whether `gpen restore` takes this file from a folder (by its extension)."""
    return str(path).lower().endswith(_IMAGE_EXTS)


def is_video_name(path):
    """Whether `gpen video` takes this file from a folder (by its extension)."""
    return str(path).lower().endswith(_VIDEO_EXTS)


def has_video():
    """Whether this build reads and writes videos (built with FFmpeg's libraries: Restorer.restore_video)."""
    return hasattr(_gpen, "join_video_segments")
