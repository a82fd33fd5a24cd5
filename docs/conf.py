"""Sphinx configuration of the flexmbd documentation.

Build (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W -b html docs docs/_build/html

Environment variables read here:

``FLEXMBD_DOCS_INTERSPHINX=1``
    Link to the numpy, scipy, scikit-fem, meshio and PyVista documentation. Sphinx
    downloads their inventories at build time, so this needs the network; it is off
    by default so that the offline build (CI) does not fail with ``-W``.
``FLEXMBD_DOCS_GALLERY=0``
    Do not run the gallery scripts (pages show their code without pictures).
"""

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("FLEXMBD_PROGRESS", "0")

from apigen import write_api_pages  # noqa: E402

import flexmbd  # noqa: E402

project = "flexmbd"
author = "the flexmbd developers"
copyright = f"2026, {author}"
release = flexmbd.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx.ext.doctest",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
if os.environ.get("FLEXMBD_DOCS_INTERSPHINX", "0") == "1":
    extensions.append("sphinx.ext.intersphinx")
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "scipy": ("https://docs.scipy.org/doc/scipy/", None),
    "skfem": ("https://scikit-fem.readthedocs.io/en/latest/", None),
    "meshio": ("https://meshio.readthedocs.io/en/latest/", None),
    "pyvista": ("https://docs.pyvista.org/", None),
}

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "gallery/README.txt", "**.ipynb_checkpoints"]
templates_path = ["_templates"]
default_role = "py:obj"

# -- API reference: one page per public name, from each namespace's __all__ -------------
write_api_pages(HERE / "api")
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()
numpydoc_attributes_as_param_list = False

# -- gallery ---------------------------------------------------------------------------
_run_gallery = os.environ.get("FLEXMBD_DOCS_GALLERY", "1") != "0"
_scrapers = ["matplotlib"]
if _run_gallery:
    from flexmbd.viz.headless import RenderingUnavailable, configure

    try:
        configure()  # headless GL backend, before VTK is loaded
    except RenderingUnavailable as err:  # the gallery still builds, without 3-D pictures
        print(f"flexmbd docs: no 3-D pictures in the gallery: {err}")
    else:
        import pyvista
        from gallery_files import OpenPlotterScraper

        pyvista.OFF_SCREEN = True
        pyvista.BUILDING_GALLERY = True
        _scrapers.append(OpenPlotterScraper())
    from gallery_files import FileScraper

    _scrapers.insert(0, FileScraper())

sphinx_gallery_conf = {
    "examples_dirs": ["gallery"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "plot_gallery": _run_gallery,
    "image_scrapers": tuple(_scrapers),
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "reset_modules_order": "both",
    "first_notebook_cell": None,
    "show_memory": False,
    "min_reported_time": 1,
}

# -- HTML ------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"flexmbd {release}"
html_static_path = []
html_theme_options = {
    "navbar_end": ["navbar-icon-links"],
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_last_updated_fmt = None
html_context = {"default_mode": "light"}
_t0 = time.time()
