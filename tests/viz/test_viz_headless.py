"""The rendering probe: a crash in the child becomes a flexmbd error, never a segfault here."""

import pytest

from flexmbd.viz import headless

EGL = {"VTK_DEFAULT_OPENGL_WINDOW": "vtkEGLRenderWindow"}


def _headless_machine(monkeypatch):
    """No display, no user GL setting, no earlier probe in this process or its parent."""
    monkeypatch.setitem(headless._STATE, "result", None)
    for var in (
        "FLEXMBD_GL_PROBED",
        "FLEXMBD_GL_PROBE",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "VTK_DEFAULT_OPENGL_WINDOW",
    ):
        monkeypatch.setenv(var, "")  # records the original state for the undo
        monkeypatch.delenv(var)


def test_probe_reports_success_or_a_reason():
    ok, msg = headless.run_probe()
    assert isinstance(ok, bool) and msg


@pytest.mark.skipif(headless.osmesa_available(), reason="OSMesa is installed here")
def test_forcing_osmesa_without_the_library_is_caught():
    # On a machine without libOSMesa this VTK setting segfaults: the child dies, we do not.
    ok, msg = headless.run_probe({"VTK_DEFAULT_OPENGL_WINDOW": "vtkOSOpenGLRenderWindow"})
    assert not ok
    assert "signal" in msg or "failed" in msg


def test_configure_raises_with_the_fix_when_nothing_renders(monkeypatch):
    monkeypatch.setitem(headless._STATE, "result", None)
    for var in ("FLEXMBD_GL_PROBED", "FLEXMBD_GL_PROBE"):
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    monkeypatch.setattr(headless, "run_probe", lambda overrides=None: (False, "died"))
    with pytest.raises(headless.RenderingUnavailable, match="install_system_deps.sh"):
        headless.configure()
    with pytest.raises(headless.RenderingUnavailable):  # cached: no second probe
        headless.configure()


def test_configure_sets_osmesa_only_when_it_is_the_one_that_works(monkeypatch):
    _headless_machine(monkeypatch)
    monkeypatch.setattr(headless, "osmesa_available", lambda: True)
    monkeypatch.setattr(headless, "egl_available", lambda: True)
    calls = []

    osmesa = {"VTK_DEFAULT_OPENGL_WINDOW": "vtkOSOpenGLRenderWindow"}

    def fake(overrides=None):
        calls.append(overrides)
        return (overrides == osmesa, "vtkOSOpenGLRenderWindow" if overrides else "no EGL")

    monkeypatch.setattr(headless, "run_probe", fake)
    assert headless.configure() == "vtkOSOpenGLRenderWindow"
    assert calls == [EGL, None, osmesa]
    import os

    assert os.environ["VTK_DEFAULT_OPENGL_WINDOW"] == "vtkOSOpenGLRenderWindow"
    monkeypatch.setitem(headless._STATE, "result", None)
    monkeypatch.delenv("VTK_DEFAULT_OPENGL_WINDOW")
    monkeypatch.delenv("FLEXMBD_GL_PROBED")
    monkeypatch.setattr(headless, "osmesa_available", lambda: False)
    calls.clear()
    with pytest.raises(headless.RenderingUnavailable):
        headless.configure()
    assert calls == [EGL, None]  # never forced without OSMesa
    assert "VTK_DEFAULT_OPENGL_WINDOW" not in os.environ


def test_egl_by_name_first_when_headless(monkeypatch):
    """No display and libEGL: the EGL window is asked for by name (the default backend
    would try X first and warn), and kept when its probe renders."""
    import os

    _headless_machine(monkeypatch)
    monkeypatch.setattr(headless, "osmesa_available", lambda: False)
    monkeypatch.setattr(headless, "egl_available", lambda: True)
    calls = []
    monkeypatch.setattr(
        headless, "run_probe", lambda overrides=None: calls.append(overrides) or (True, "egl")
    )
    headless.configure()
    assert calls == [EGL]
    assert os.environ["VTK_DEFAULT_OPENGL_WINDOW"] == "vtkEGLRenderWindow"


def test_osmesa_goes_first_when_there_is_no_egl(monkeypatch):
    _headless_machine(monkeypatch)
    monkeypatch.setattr(headless, "osmesa_available", lambda: True)
    monkeypatch.setattr(headless, "egl_available", lambda: False)
    calls = []
    monkeypatch.setattr(
        headless, "run_probe", lambda overrides=None: calls.append(overrides) or (True, "osmesa")
    )
    headless.configure()
    assert calls == [{"VTK_DEFAULT_OPENGL_WINDOW": "vtkOSOpenGLRenderWindow"}]


def test_a_success_is_remembered_across_processes_and_a_failure_is_not(monkeypatch):
    import os

    _headless_machine(monkeypatch)
    monkeypatch.setattr(headless, "osmesa_available", lambda: False)
    monkeypatch.setattr(headless, "egl_available", lambda: True)
    calls = []
    verdict = {"ok": False}

    def fake(overrides=None):
        calls.append(overrides)
        return (verdict["ok"], "vtkEGLRenderWindow" if verdict["ok"] else "no GL")

    monkeypatch.setattr(headless, "run_probe", fake)
    with pytest.raises(headless.RenderingUnavailable):
        headless.configure()
    assert calls == [EGL, None]
    # a "new process": the failure was not stored, so the probe runs again
    _headless_machine(monkeypatch)
    verdict["ok"] = True
    calls.clear()
    assert headless.configure() == "vtkEGLRenderWindow"
    assert calls == [EGL]
    assert os.environ["VTK_DEFAULT_OPENGL_WINDOW"] == "vtkEGLRenderWindow"
    # next "process" with the same libraries and variables: no probe, same backend set
    _headless_machine(monkeypatch)
    calls.clear()
    assert headless.configure() == "vtkEGLRenderWindow"
    assert calls == []
    assert os.environ["VTK_DEFAULT_OPENGL_WINDOW"] == "vtkEGLRenderWindow"
    assert os.environ["FLEXMBD_GL_PROBED"] == "ok:vtkEGLRenderWindow"
    # anything the verdict depends on changes (here the driver variable): probe again
    _headless_machine(monkeypatch)
    monkeypatch.setenv("LIBGL_ALWAYS_SOFTWARE", "1")
    assert headless.configure() == "vtkEGLRenderWindow"
    assert calls == [EGL]
    # and the cache can be turned off
    _headless_machine(monkeypatch)
    monkeypatch.setenv("FLEXMBD_GL_PROBE_CACHE", "0")
    calls.clear()
    headless.configure()
    assert calls == [EGL]


def test_an_unreadable_or_unwritable_cache_only_costs_a_probe(monkeypatch, tmp_path):
    _headless_machine(monkeypatch)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("FLEXMBD_CACHE_DIR", str(blocker / "sub"))
    monkeypatch.setattr(headless, "osmesa_available", lambda: False)
    monkeypatch.setattr(headless, "egl_available", lambda: True)
    calls = []
    monkeypatch.setattr(
        headless, "run_probe", lambda overrides=None: (calls.append(overrides), (True, "w"))[1]
    )
    assert headless.configure() == "w"
    _headless_machine(monkeypatch)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "gl-probe.json").write_text("{not json")
    monkeypatch.setenv("FLEXMBD_CACHE_DIR", str(cache))
    assert headless.configure() == "w"
    assert calls == [EGL, EGL]
