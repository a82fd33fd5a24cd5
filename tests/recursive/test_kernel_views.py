"""The packed workspaces' views (`_kernels._cview`, `unpack_ints`, `_views`) count their
references: usable from kernels that count references (NRT) and from Python.

A view that did not take a reference on its buffer made every NRT kernel with two views
free the buffer's memory-info early (heap corruption: ``free(): invalid pointer``). The
checks run in a child process, since that defect aborts the interpreter."""

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from numba import njit
    from flexmbd.recursive import _kernels as K
    from tests.recursive.models import chain

    @njit
    def two_views(buf):  # an NRT kernel (it allocates) holding two views of buf
        a = K._cview(buf, 2, (2, 3))
        b = K._cview(buf, 4, (3, 2))
        out = np.empty(2)
        out[0] = a[0, 0] + a[1, 2]
        out[1] = b[2, 1]
        return out, b

    buf = np.arange(20.0)
    before = sys.getrefcount(buf)
    for _ in range(2000):
        out, view = two_views(buf)
    assert out.tolist() == [2.0 + 7.0, 9.0], out
    assert view.tolist() == buf[4:10].reshape(3, 2).tolist()
    view[0, 0] = -1.0  # a view, not a copy
    assert buf[4] == -1.0
    del view
    assert sys.getrefcount(buf) == before, (sys.getrefcount(buf), before)

    Ib, _, _ = chain(6).compile("recursive").packed_rigid()
    for _ in range(200):
        Ia, Sa = K.unpack_ints(Ib)  # from Python: views of the packed ints
    n1 = Ib[K.IB_N1]
    assert Ia.shape == (K.NI, n1)
    assert Ia.ravel().tolist() == Ib[K.IB_HEAD : K.IB_HEAD + K.NI * n1].tolist()
    assert Sa.tolist() == Ib[K.IB_HEAD + K.NI * n1 :].tolist()
    del Ia, Sa
    print("views ok")
    """
)


def test_views_of_the_packed_workspaces_count_their_references():
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).parents[2],
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "views ok" in run.stdout
