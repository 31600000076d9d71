"""Second order: the second-order adjoint of inverse dynamics (``adjoint.py``), the contracted
Hessians of rnea and aba (``hessians.py``), IDSVA's second-order tensors (``tensors.py``) and the
public second-order functions with their specs (``derivatives.py``)."""
