"""The software identity a regulator verifies in the field (GLI-12/GLI-13 style): what was installed, from which
commit and lock, and whether every installed file still matches the distribution's own record."""
