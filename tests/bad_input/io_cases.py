"""Files for the bad-input table of files, checkpoints, results and the CLI.

Good files made in a fraction of a second (a small Results, a tiny reduced body, a
checkpoint of a harmonic oscillator) and every way to spoil them.
"""

import os
import textwrap

import numpy as np

from flexmbd.checkpoint import run
from flexmbd.results import Results

h5py = __import__("h5py")


class Oscillator:
    """x'' = -x with a fixed explicit Euler-Cromer step: the smallest stepper of the
    checkpoint contract (spec() lets resume rebuild it)."""

    def __init__(self, h=0.01):
        self.h, self.t, self.x, self.v = h, 0.0, 1.0, 0.0

    def step(self):
        self.v -= self.h * self.x
        self.x += self.h * self.v
        self.t += self.h

    def sample(self):
        return {
            "q": np.array([self.x]),
            "qd": np.array([self.v]),
            "energy:total": 0.5 * (self.x**2 + self.v**2),
        }

    def header(self):
        return {
            "coordinates": [("x", "x")],
            "speeds": [("x", "v")],
            "joint_names": [],
            "meta": {"model": "oscillator"},
        }

    def state_dict(self):
        return {"t": self.t, "x": self.x, "v": self.v}

    def load_state_dict(self, s):
        self.t, self.x, self.v = s["t"], s["x"], s["v"]

    def spec(self):
        return {"factory": "io_cases:Oscillator", "kwargs": {"h": self.h}}


def small_results(nt=5):
    t = np.linspace(0.0, 1.0, nt)
    return Results(
        t,
        np.c_[np.sin(t)],
        np.c_[np.cos(t)],
        coordinates=[("j", "angle")],
        speeds=[("j", "rate")],
        joint_names=["j"],
        energy={"kinetic": 0.5 * np.cos(t) ** 2},
        meta={"model": "small"},
    )


def results_file(tmp, suffix=".h5"):
    return small_results().save(tmp / f"good{suffix}")


def checkpoint_file(tmp, name="cp.h5", t_end=0.5):
    path = tmp / name
    run(Oscillator(), t_end, checkpoint=path, every=10)
    return path


def reduced_file(tmp, name="body.npz"):
    """A tiny, consistent ReducedBody file (2 nodes, 1 mode; no FE behind it)."""
    from flexmbd.fem import ReducedBody

    m = 1
    body = ReducedBody(
        nodes=np.array([[0.0, 0, 0], [1.0, 0, 0]]),
        cells=np.array([[0, 1]]),
        modes=np.ones((6, m)),
        frequencies=np.ones(m),
        mode_frequencies=np.ones(m),
        M_ff=np.eye(m),
        K_ff=np.eye(m),
        D_ff=np.zeros((m, m)),
        mass=1.0,
        material=np.array([2.1e11, 0.3, 7850.0]),
        name="tiny",
        cell_type="line",
        mode_kind=["normal"],
        mode_label=["bend"],
        mode_mix=[""],
    )
    path = tmp / name
    body.save(path)
    return path


# -- corruptions: name -> function(tmp, good file) -> spoiled file ------------------------
def _truncated(tmp, good):
    data = good.read_bytes()
    out = tmp / f"truncated{good.suffix}"
    out.write_bytes(data[: len(data) // 2])
    return out


def _empty(tmp, good):
    out = tmp / f"empty{good.suffix}"
    out.write_bytes(b"")
    return out


def _text(tmp, good):
    out = tmp / f"text{good.suffix}"
    out.write_text("t,q\n0,1\n1,2\n")
    return out


def _random(tmp, good):
    out = tmp / f"random{good.suffix}"
    out.write_bytes(np.random.default_rng(0).bytes(4096))
    return out


def _hdf5_magic_only(tmp, good):
    out = tmp / f"magic{good.suffix}"
    out.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    return out


def _zip_magic_only(tmp, good):
    out = tmp / f"zipmagic{good.suffix}"
    out.write_bytes(b"PK\x03\x04" + b"\x01" * 200)
    return out


def _foreign_h5(tmp, good):
    out = tmp / "foreign.h5"
    with h5py.File(out, "w") as f:
        f["x"] = np.arange(3.0)
    return out


def _foreign_npz(tmp, good):
    out = tmp / "foreign.npz"
    np.savez(out, a=np.arange(3.0))
    return out


def _pickled_npz(tmp, good):
    out = tmp / "pickled.npz"
    np.savez(
        out, __header__=np.array([{"evil": 1}], dtype=object), schema=np.array([{}], dtype=object)
    )
    return out


def _npy(tmp, good):
    out = tmp / "array.npy"
    np.save(out, np.arange(4.0))
    return out


def _bad_json_npz(tmp, good):
    out = tmp / "badjson.npz"
    np.savez(out, __header__=np.array("{not json"), t=np.zeros(2))
    return out


def _missing_arrays_npz(tmp, good):
    out = tmp / "noarrays.npz"
    header = '{"schema": 1, "coordinates": [], "speeds": [], "joint_names": [], "meta": {}}'
    np.savez(out, __header__=np.array(header), t=np.zeros(2))
    return out


def _inconsistent_npz(tmp, good):
    out = tmp / "inconsistent.npz"
    header = (
        '{"schema": 1, "coordinates": [["j", "a"]], "speeds": [["j", "r"]], '
        '"joint_names": [], "meta": {}}'
    )
    np.savez(
        out,
        __header__=np.array(header),
        t=np.zeros(4),
        q=np.zeros((3, 1)),
        qd=np.zeros((4, 1)),
        qdd=np.zeros((4, 1)),
        reactions=np.zeros((4, 0, 6)),
    )
    return out


def _directory(tmp, good):
    out = tmp / "adir.h5"
    out.mkdir()
    return out


def _missing(tmp, good):
    return tmp / "missing" / "nothere.h5"


def _other_kind(tmp, good):
    """A good file of the other kind (a reduced body for Results loaders and back)."""
    if good.suffix == ".npz" and "body" in good.name:
        return results_file(tmp, ".npz")
    return reduced_file(tmp, "other_body.npz")


def _results_not_checkpoint(tmp, good):
    return results_file(tmp, ".h5")


def _bad_shapes_body(tmp, good):
    out = tmp / "badshapes.npz"
    with np.load(good) as z:
        data = {k: z[k] for k in z.files}
    data["modes"] = np.ones((5, 3))
    np.savez(out, **data)
    return out


CORRUPTIONS = {
    "truncated": _truncated,
    "empty": _empty,
    "text": _text,
    "random-bytes": _random,
    "hdf5-magic-only": _hdf5_magic_only,
    "zip-magic-only": _zip_magic_only,
    "foreign-h5": _foreign_h5,
    "foreign-npz": _foreign_npz,
    "pickled-npz": _pickled_npz,
    "npy": _npy,
    "bad-json-header": _bad_json_npz,
    "missing-arrays": _missing_arrays_npz,
    "inconsistent-lengths": _inconsistent_npz,
    "directory": _directory,
    "missing": _missing,
    "other-kind": _other_kind,
}
#: corruptions only meaningful for some loaders
CHECKPOINT_ONLY = {"results-not-checkpoint": _results_not_checkpoint}
BODY_ONLY = {"inconsistent-shapes": _bad_shapes_body}


def script(tmp, body, name="model.py"):
    """A model script that leaves ``ran.marker`` when it runs (to see that a bad
    argument is refused before the script's work)."""
    path = tmp / name
    path.write_text(
        textwrap.dedent(f"""
        import pathlib
        pathlib.Path({str(tmp / "ran.marker")!r}).write_text("ran")
    """)
        + textwrap.dedent(body)
    )
    return path


PENDULUM = """
import flexmbd as fm

def build():
    m = fm.Model("pendulum")
    m.link = fm.RigidBody.rod(MASS, 1.0, origin="end", radius=0.02)
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[0.5])
    m.g = fm.Gravity((0, -9.81, 0))
    return m
"""


def pendulum_script(tmp, mass=1.0, name="pendulum.py"):
    return script(tmp, PENDULUM.replace("MASS", repr(mass)), name)


def marker_ran(tmp):
    return os.path.exists(tmp / "ran.marker")
