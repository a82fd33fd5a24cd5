"""A sphinx-gallery image scraper for picture files an example writes.

flexmbd's examples render with PyVista off-screen and save their pictures (PNG stills,
GIF animations, matplotlib plots) to files rather than leaving windows open. A gallery
script hands such files to the page with :func:`show_files`; after each code block
this scraper copies the files handed over since the last block next to the page and
returns the reST that shows them. (Open PyVista plotters and matplotlib figures are
still collected by PyVista's and matplotlib's own scrapers.)
"""

import shutil
from pathlib import Path

_PENDING = []


def show_files(*paths):
    """Queue picture files (PNG, GIF, JPG) to appear after the current code block."""
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise FileNotFoundError(f"gallery: {p} was not written by the example")
        _PENDING.append(p)


class FileScraper:
    """Scraper: copy the queued files to the gallery's image paths."""

    def __repr__(self):  # stable for sphinx's config cache
        return "FileScraper"

    def __call__(self, block, block_vars, gallery_conf):
        from sphinx_gallery.scrapers import figure_rst

        if not _PENDING:
            return ""
        images = []
        it = block_vars["image_path_iterator"]
        for src in _PENDING:
            dest = Path(next(it)).with_suffix(src.suffix.lower())
            shutil.copyfile(src, dest)
            images.append(str(dest))
        _PENDING.clear()
        return figure_rst(images, gallery_conf["src_dir"])


def load_example(name):
    """Import ``examples/<name>.py`` of the repository as a module (its ``main`` unrun)."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    if str(path.parent) not in sys.path:  # examples import their neighbours
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pictures(directory, pattern="*"):
    """Queue every PNG and GIF file in ``directory`` (sorted by name)."""
    files = sorted(
        p for p in Path(directory).glob(pattern) if p.suffix.lower() in (".png", ".gif", ".jpg")
    )
    show_files(*files)
    return [p.name for p in files]


class OpenPlotterScraper:
    """PyVista's scraper for the plotters a block leaves open.

    flexmbd's own rendering functions close their plotters once the picture is saved
    (those pictures reach the page through :func:`show_files`); PyVista's scraper would
    try to screenshot them again, so closed plotters without a last image (the ones
    ``Plotter.show()`` keeps for the gallery) are dropped before it runs.
    """

    def __init__(self):
        import pyvista

        self._scraper = pyvista.Scraper()

    def __repr__(self):
        return "OpenPlotterScraper"

    def __call__(self, block, block_vars, gallery_conf):
        import pyvista

        plotters = pyvista.plotting.plotter._ALL_PLOTTERS
        for key in [
            k
            for k, p in plotters.items()
            if getattr(p, "_closed", False) and getattr(p, "last_image", None) is None
        ]:
            del plotters[key]
        return self._scraper(block, block_vars, gallery_conf)
