"""Type aliases of the public API (annotations only; nothing here runs at import time).

``Array`` is a float numpy array; ``ArrayLike`` anything numpy converts to one
(lists, tuples, arrays); ``Pose`` a pair ``(R, p)`` of a 3x3 rotation matrix and a
3-vector (m), the frame given in its parent's axes; ``StrPath`` a file name as ``str`` or
``os.PathLike``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Array", "ArrayLike", "Pose", "StrPath", "Wrench"]

Array = NDArray[np.float64]
Pose = tuple[Array, Array]
Wrench = NDArray[Any]
StrPath = str | os.PathLike[str]
