"""Image measures shared by the viz tests."""

import numpy as np


def drawn_share(img, background=(255, 255, 255), tol=8):
    """Share of pixels that differ from the background colour."""
    img = np.asarray(img)[..., :3].astype(int)
    return float((np.abs(img - np.asarray(background)).max(axis=-1) > tol).mean())


def body_mask(img, tol=8):
    img = np.asarray(img)[..., :3].astype(int)
    return np.abs(img - 255).max(axis=-1) > tol


def scene(img):
    """The image without the label (top 10 %) and the horizontal colour bar (bottom 30 %)."""
    h = np.asarray(img).shape[0]
    return np.asarray(img)[int(0.1 * h) : int(0.7 * h)]


def colored(img, min_saturation=40):
    """Pixels of the colour map (saturated), excluding grey/white/text and pale rigid bodies."""
    px = np.asarray(img)[..., :3].reshape(-1, 3).astype(int)
    return px[(px.max(axis=1) - px.min(axis=1)) > min_saturation]


def warmth(img):
    """Mean red-minus-blue of the colour-mapped pixels: viridis runs from purple (about
    -16) to yellow (about +215), so it grows with the mapped value."""
    px = colored(scene(img))
    return float((px[:, 0] - px[:, 2]).mean()) if len(px) else float("nan")


def hot_share(img):
    """Share of yellow-green pixels (upper part of viridis) in the scene region."""
    s = scene(img)[..., :3].astype(int)
    return float(((s[..., 0] > 140) & (s[..., 1] > 170) & (s[..., 2] < 160)).mean())


def viridis_values(img):
    """Colour-map value in [0, 1] of each colour-mapped pixel of the scene region.

    Shading scales a colour by a lighting factor, so pixels are matched to the viridis
    table by direction (cosine of RGB vectors), not by brightness.
    """
    from matplotlib import colormaps

    lut = colormaps["viridis"](np.linspace(0.0, 1.0, 256))[:, :3]
    lut /= np.linalg.norm(lut, axis=1, keepdims=True)
    px = colored(scene(img)).astype(float)
    if not len(px):
        return np.zeros(0)
    px /= np.linalg.norm(px, axis=1, keepdims=True)
    return np.argmax(px @ lut.T, axis=1) / 255.0
