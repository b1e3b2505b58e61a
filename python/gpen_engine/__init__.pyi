from os import PathLike
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._gpen import Detector as Detector
from ._gpen import Error as Error
from ._gpen import ImageMeta as ImageMeta
# Restorer(model=GPEN.gpw, GFPGAN.gpw or CodeFormer.gpw, detector, ..., upscale=1,
# only_center_face=False, fidelity=0.5): the last three are the facexlib flows' (see _gpen.pyi).
from ._gpen import Restorer as Restorer
from ._gpen import cuda_compiled_in as cuda_compiled_in
from ._gpen import imdecode as imdecode
from ._gpen import imencode as imencode
from ._gpen import imread as imread
from ._gpen import imwrite as imwrite

__version__: str
_Path = Union[str, PathLike[str]]

def plan(model: Optional[_Path] = None, *, arch: str = "gpen", size: int = 512, batch: int = 1,
         precision: str = "fp32", device: str = "cpu", strategy: Optional[str] = None, pipeline: bool = False,
         input_size: Union[str, Tuple[int, int]] = "1000x750", channel_multiplier: int = 2, narrow: float = 1.0,
         sizes: Sequence[int] = (), batches: Sequence[int] = (), precisions: Sequence[str] = (),
         max_batch_for: Optional[Union[str, int]] = None, remat: bool = False, reorder: bool = False,
         remat_max_flops: float = 2.0, tensors: bool = False, official: bool = False,
         sweep: bool = False) -> Any: ...
def info(path: _Path, *, tensors: bool = False) -> dict[str, Any]: ...
def convert(input: _Path, output: _Path, *, arch: str = "auto", key: Optional[str] = None,
            dtype: str = "fp32", task: Optional[str] = None, dense_dtype: str = "fp32",
            dense_layers: str = "modulation", group_size: int = 0) -> dict[str, Any]: ...
def output_name(relative_path: _Path) -> str: ...
def is_image_name(path: _Path) -> bool: ...
def is_video_name(path: _Path) -> bool: ...
def has_video() -> bool: ...
