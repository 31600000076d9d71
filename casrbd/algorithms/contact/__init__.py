"""Rigid contacts: contact sets (``sets.py``), constraint and impulse dynamics (``dynamics.py``) and
their derivatives (``derivatives.py``)."""
