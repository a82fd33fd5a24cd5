"""Time integrators: explicit (RK4, adaptive RK) and implicit (Newmark, HHT, generalized-alpha)."""
