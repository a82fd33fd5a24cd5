"""
Writing a mesh: the rod of Simeon's slider-crank
================================================

How ``meshes/rod_simeon_hex27.vtu`` was made: a scikit-fem tensor mesh of 30 x 1 x 1
quadratic hexahedra written with meshio through scikit-fem's converter. Not run here
(it rewrites a shipped mesh).
"""

# %%
# The example's source
# --------------------
#
# .. literalinclude:: ../../examples/make_simeon_rod.py
#    :language: python
