//! Kernels as PTO-ISA C++ (see the crate docs).
