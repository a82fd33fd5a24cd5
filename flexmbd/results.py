"""Results: time histories of one simulation, stored as arrays.

One class for every formulation and integrator. Arrays (never lists of per-step
objects):

* ``t`` (nt,) s;
* ``q`` (nt, nq) coordinates, ``qd`` (nt, nv) speeds, ``qdd`` (nt, nv) their rates,
  described by ``coordinates`` and ``speeds`` (lists of ``(owner, label)``: owner is
  a joint name in the recursive formulation, a body name in the absolute one);
* ``reactions`` (nt, n_joints, 6): reaction wrench of every joint (parent on
  child, at the child joint frame origin, child-frame axes, ``[n; f]``), ordered
  as ``joint_names``;
* ``energy``: dict of (nt,) arrays (``kinetic``, ``potential``, ...);
* ``stats``: dict of (nt,) arrays (Newton iterations, residual norms, constraint
  violations, rank, ...);
* ``meta``: dict of scalars/strings (formulation, integrator, dt, model name).
"""

import numpy as np

from .errors import FlexmbdError

__all__ = ["Results", "JointHistory", "BodyHistory"]


class JointHistory:
    """Named view of one joint's time histories (``res.joint("j1").q``)."""

    def __init__(self, res, name):
        self._res = res
        self.name = name

    def _cols(self, table):
        cols = [i for i, (owner, _) in enumerate(table) if owner == self.name]
        if not cols:
            raise FlexmbdError(f"joint {self.name!r} has no coordinates in these results")
        return cols

    @property
    def q(self):
        """Coordinates (nt, nq_joint)."""
        return self._res.q[:, self._cols(self._res.coordinates)]

    @property
    def qd(self):
        """Speeds (nt, nv_joint)."""
        return self._res.qd[:, self._cols(self._res.speeds)]

    @property
    def qdd(self):
        """Speed rates (nt, nv_joint)."""
        return self._res.qdd[:, self._cols(self._res.speeds)]

    @property
    def reaction(self):
        """Reaction wrench history (nt, 6)."""
        return self._res.reaction(self.name)


class BodyHistory:
    """Named view of one body's time histories (``res.body("rod").modal``)."""

    def __init__(self, res, name):
        self._res = res
        self.name = name

    @property
    def modal(self):
        """Modal coordinates (nt, n_modes) of a flexible body."""
        try:
            return self._res.extra[f"modal:{self.name}"]
        except KeyError:
            raise FlexmbdError(f"body {self.name!r} has no modal coordinates") from None

    @property
    def position(self):
        """World position of the body frame origin (nt, 3), when stored."""
        return self._res.extra[f"position:{self.name}"]

    @property
    def orientation(self):
        """Euler parameters of the body frame (nt, 4), when stored."""
        return self._res.extra[f"orientation:{self.name}"]


class Results:
    """Time histories of a simulation (see the module docstring)."""

    def __init__(self, t, q, qd, qdd=None, *, coordinates=(), speeds=(), joint_names=(),
                 reactions=None, energy=None, stats=None, extra=None, meta=None):
        self.t = np.asarray(t, dtype=float)
        self.q = np.asarray(q, dtype=float)
        self.qd = np.asarray(qd, dtype=float)
        self.qdd = np.zeros_like(self.qd) if qdd is None else np.asarray(qdd, dtype=float)
        self.coordinates = [tuple(c) for c in coordinates]
        self.speeds = [tuple(c) for c in speeds]
        self.joint_names = list(joint_names)
        nt = len(self.t)
        self.reactions = (np.zeros((nt, len(self.joint_names), 6)) if reactions is None
                          else np.asarray(reactions, dtype=float))
        self.energy = {k: np.asarray(v, dtype=float) for k, v in (energy or {}).items()}
        self.stats = {k: np.asarray(v) for k, v in (stats or {}).items()}
        self.extra = {k: np.asarray(v) for k, v in (extra or {}).items()}
        self.meta = dict(meta or {})

    def __len__(self):
        return len(self.t)

    def __repr__(self):
        span = f"t = {self.t[0]:.6g} .. {self.t[-1]:.6g} s" if len(self.t) else "empty"
        return (f"<Results {self.meta.get('model', '')} {span}, {len(self.t)} samples, "
                f"{self.q.shape[1] if self.q.ndim == 2 else 0} coordinates>")

    # -- named access -----------------------------------------------------------------
    def joint(self, name):
        """:class:`JointHistory` of joint ``name``."""
        return JointHistory(self, name)

    def body(self, name):
        """:class:`BodyHistory` of body ``name``."""
        return BodyHistory(self, name)

    def reaction(self, name):
        """Reaction wrench history (nt, 6) of joint ``name``, ``[n; f]`` in child joint axes."""
        try:
            k = self.joint_names.index(name)
        except ValueError:
            raise FlexmbdError(
                f"no reaction for joint {name!r}; joints: {self.joint_names}"
            ) from None
        return self.reactions[:, k, :]

    def slice(self, stop):
        """Results truncated to the first ``stop`` samples (used for partial results)."""
        return Results(
            self.t[:stop], self.q[:stop], self.qd[:stop], self.qdd[:stop],
            coordinates=self.coordinates, speeds=self.speeds, joint_names=self.joint_names,
            reactions=self.reactions[:stop],
            energy={k: v[:stop] for k, v in self.energy.items()},
            stats={k: v[:stop] for k, v in self.stats.items()},
            extra={k: v[:stop] for k, v in self.extra.items()}, meta=self.meta,
        )

    # -- export -----------------------------------------------------------------------
    def to_dict(self):
        """Flat dict ``column name -> (nt,) array``."""
        cols = {"t": self.t}
        for i, (owner, lab) in enumerate(self.coordinates):
            cols[f"q:{owner}:{lab}"] = self.q[:, i]
        for i, (owner, lab) in enumerate(self.speeds):
            cols[f"qd:{owner}:{lab}"] = self.qd[:, i]
            cols[f"qdd:{owner}:{lab}"] = self.qdd[:, i]
        comp = ("nx", "ny", "nz", "fx", "fy", "fz")
        for k, name in enumerate(self.joint_names):
            for c in range(6):
                cols[f"reaction:{name}:{comp[c]}"] = self.reactions[:, k, c]
        for k, v in self.energy.items():
            cols[f"energy:{k}"] = v
        for k, v in self.stats.items():
            if v.ndim == 1:
                cols[f"stats:{k}"] = v
        return cols

    def to_dataframe(self):
        """A pandas DataFrame indexed by time (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as err:  # pragma: no cover - pandas is an optional extra
            raise FlexmbdError("to_dataframe needs pandas: pip install 'flexmbd[io]'") from err
        cols = self.to_dict()
        t = cols.pop("t")
        return pd.DataFrame(cols, index=pd.Index(t, name="t"))

    def save(self, path):
        """Save to ``.npz`` (exact round trip with :meth:`load`)."""
        import json

        arrays = {"t": self.t, "q": self.q, "qd": self.qd, "qdd": self.qdd,
                  "reactions": self.reactions}
        arrays.update({f"energy__{k}": v for k, v in self.energy.items()})
        arrays.update({f"stats__{k}": v for k, v in self.stats.items()})
        arrays.update({f"extra__{k}": v for k, v in self.extra.items()})
        header = {"schema": 1, "coordinates": self.coordinates, "speeds": self.speeds,
                  "joint_names": self.joint_names, "meta": self.meta}
        np.savez(path, __header__=np.array(json.dumps(header, default=str)), **arrays)

    @classmethod
    def load(cls, path):
        """Load results written by :meth:`save`."""
        import json

        with np.load(path, allow_pickle=False) as z:
            header = json.loads(str(z["__header__"]))
            pick = lambda prefix: {k[len(prefix):]: z[k] for k in z.files if k.startswith(prefix)}
            return cls(z["t"], z["q"], z["qd"], z["qdd"], coordinates=header["coordinates"],
                       speeds=header["speeds"], joint_names=header["joint_names"],
                       reactions=z["reactions"], energy=pick("energy__"), stats=pick("stats__"),
                       extra=pick("extra__"), meta=header["meta"])
