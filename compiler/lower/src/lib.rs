//! Lowering of checked programs to the Program IR (a salsa query over wsp-core).
