"""Off-screen rendering probe, run in a child process (``python -m flexmbd.viz._probe``).

VTK links no GL library and loads one at run time; with none present it
segfaults instead of raising (docs/design/facts.rst). So the parent never tries rendering
first: it runs this module in a subprocess, and a crash there only costs the child.

The child renders a sphere into a 64 x 64 off-screen window and checks that
pixels other than the background were drawn. Exit code 0 and a line
``flexmbd-gl-probe ok <render window class>`` on success; any other outcome
(non-zero exit, signal, missing line) means rendering is unavailable with the
current environment variables.
"""

import sys


def probe():
    """Render once; return the render-window class name (raises on failure)."""
    import vtkmodules.vtkRenderingOpenGL2  # noqa: F401 - registers the OpenGL backends
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkFiltersSources import vtkSphereSource
    from vtkmodules.vtkRenderingCore import (
        vtkActor,
        vtkPolyDataMapper,
        vtkRenderer,
        vtkRenderWindow,
        vtkWindowToImageFilter,
    )

    src = vtkSphereSource()
    mapper = vtkPolyDataMapper()
    mapper.SetInputConnection(src.GetOutputPort())
    actor = vtkActor()
    actor.SetMapper(mapper)
    ren = vtkRenderer()
    ren.AddActor(actor)
    ren.SetBackground(1.0, 1.0, 1.0)
    win = vtkRenderWindow()
    win.SetOffScreenRendering(1)
    win.SetSize(64, 64)
    win.AddRenderer(ren)
    win.Render()
    grab = vtkWindowToImageFilter()
    grab.SetInput(win)
    grab.SetInputBufferTypeToRGB()
    grab.Update()
    px = vtk_to_numpy(grab.GetOutput().GetPointData().GetScalars()).reshape(-1, 3)
    drawn = float((px != 255).any(axis=1).mean())
    if not drawn > 0.02:
        raise RuntimeError(f"render produced a blank image ({drawn:.3f} of pixels drawn)")
    name = win.GetClassName()
    win.Finalize()
    return name


def main():
    try:
        name = probe()
    except Exception as err:  # noqa: BLE001 - report any failure to the parent
        print(f"flexmbd-gl-probe failed {type(err).__name__}: {err}", flush=True)
        return 1
    print(f"flexmbd-gl-probe ok {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
