"""The compiled part of gpen_engine (nanobind). Images: H x W x 3 uint8 BGR, C-contiguous."""
from typing import Any, Callable, Literal, Optional, Sequence, Tuple, TypedDict, Union, overload

import numpy as np
import numpy.typing as npt

Image = npt.NDArray[np.uint8]

class Face(TypedDict):
    box: Tuple[float, float, float, float]  # x1, y1, x2, y2 in photo pixels
    score: float
    landmarks: list[Tuple[float, float]]  # left eye, right eye, nose, mouth left, mouth right

class VideoProgress(TypedDict):
    frames: int  # written so far
    frames_total: int  # expected (0: unknown)
    faces: int
    elapsed_s: float

class Error(RuntimeError):
    """An engine error; the message names the file or value at fault."""

class ImageMeta:
    """EXIF (orientation reset to 1 once applied) and ICC profile of a decoded photo."""
    def __init__(self) -> None: ...
    @property
    def exif(self) -> bytes: ...
    @property
    def icc(self) -> bytes: ...
    @property
    def orientation(self) -> int: ...

class Restorer:
    """The restore job of `gpen restore`. `model` is a converted GPEN, GFPGAN, CodeFormer or RestoreFormer .gpw;
    its kind picks the flow (GPEN's official one, GFPGANer.enhance's or inference_codeformer.py's).
    Options of another kind are refused with Error naming them: sr, precision other than fp32,
    memory_budget, batch, det_max_side and device "cuda" are GPEN's; upscale (the output at that
    many times the photo's size) and only_center_face (only the face nearest the centre) are
    GFPGAN's and CodeFormer's; fidelity (w, default 0.5) and face_upsample (with sr: the restored faces
    upsampled by the background upsampler too, --face_upsample) are CodeFormer's. parse (a ParseNet .gpw)
    gives every flow its face-parsing paste mask. restore_aligned with GFPGAN, CodeFormer or RestoreFormer is
    their has_aligned=True. low_memory=True (GPEN, CPU) is `gpen restore --memory-budget`: memory_budget
    (required) is then what a photo may hold at its peak, everything planned counted."""
    def __init__(self, model: str, detector: str, parse: Optional[str] = None, sr: Optional[str] = None, *,
                 device: str = "auto", precision: Optional[str] = None,
                 memory_budget: Optional[Union[int, str]] = None, threads: Optional[int] = None,
                 alpha: float = 1.0, threshold: float = 0.0, det_max_side: Optional[int] = None,
                 batch: Optional[int] = None, sr_tile: str = "auto", upscale: int = 1,
                 only_center_face: bool = False, fidelity: float = 0.5, face_upsample: bool = False,
                 low_memory: bool = False) -> None: ...
    def restore(self, image: Image) -> Tuple[Image, list[Face]]: ...
    def restore_aligned(self, face: Image) -> Image: ...
    def sr_tile(self, width: int, height: int) -> Tuple[int, str]: ...
    def restore_video(self, src: str, dst: str, *, codec: Optional[str] = None, pix_fmt: Optional[str] = None,
                      crf: Optional[int] = None, preset: Optional[str] = None, start: Optional[float] = None,
                      duration: Optional[float] = None, ignore_orientation: bool = False,
                      max_pixels: Optional[int] = None,
                      progress: Optional[Callable[[VideoProgress], object]] = None,
                      run_start: Optional[float] = None, other_streams: bool = True,
                      smooth: int = 0) -> dict[str, Any]: ...
    @property
    def memory(self) -> dict[str, Union[int, str, bool]]: ...
    @property
    def plan(self) -> dict[str, Any]: ...
    @property
    def size(self) -> int: ...
    @property
    def device(self) -> str: ...

class Detector:
    def __init__(self, path: str, *, device: str = "auto", threshold: float = 0.9,
                 det_max_side: Optional[int] = None, threads: Optional[int] = None) -> None: ...
    def detect(self, image: Image) -> list[Face]: ...
    @property
    def device(self) -> str: ...

@overload
def imread(path: str, *, meta: Literal[False] = False, max_pixels: Optional[int] = None,
           ignore_orientation: bool = False) -> Image: ...
@overload
def imread(path: str, *, meta: Literal[True], max_pixels: Optional[int] = None,
           ignore_orientation: bool = False) -> Tuple[Image, ImageMeta]: ...
@overload
def imdecode(data: bytes, name: str = "<bytes>", *, meta: Literal[False] = False, max_pixels: Optional[int] = None,
             ignore_orientation: bool = False) -> Image: ...
@overload
def imdecode(data: bytes, name: str = "<bytes>", *, meta: Literal[True], max_pixels: Optional[int] = None,
             ignore_orientation: bool = False) -> Tuple[Image, ImageMeta]: ...
def imwrite(path: str, image: Image, *, quality: int = 95, meta: Optional[ImageMeta] = None) -> None: ...
def imencode(ext: str, image: Image, *, quality: int = 95, meta: Optional[ImageMeta] = None) -> bytes: ...
def cuda_compiled_in() -> bool: ...
def video_keyframe_cuts(path: str) -> list[float]: ...
def join_video_segments(source: str, segments: Sequence[str], output: str, *, start: Optional[float] = None,
                        duration: Optional[float] = None, ignore_orientation: bool = False) -> int: ...
def _plan(**kwargs: object) -> str: ...
def _info(path: str, tensors: bool = False) -> str: ...
def _convert(input: str, output: str, arch: str = "auto", key: Optional[str] = None, dtype: str = "fp32",
             task: Optional[str] = None, dense_dtype: str = "fp32", dense_layers: str = "modulation",
             group_size: int = 0) -> str: ...
__version__: str
