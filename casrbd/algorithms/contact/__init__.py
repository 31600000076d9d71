"""Rigid contacts: contact types (``types.py``), contact sets (``sets.py``), constraint and impulse
dynamics (``dynamics.py``), their derivatives (``derivatives.py``) and second-order adjoints (``hessians.py``)."""
