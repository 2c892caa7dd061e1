//! # agentsim-alloc
//!
//! The `agentsim` command's global allocator: mimalloc. A sweep allocates and
//! frees many small values per event, and the system allocator spent about a
//! third of a sweep's time there (BENCHMARKS.md).
//!
//! A crate of its own because the allocator's entry points are compiled with the
//! crate that declares it: the command is built at opt-level 0 in `release` (it
//! parses arguments and prints), and an unoptimised allocator call on every
//! allocation cost a sweep about 8%. Declared here, the allocator is optimised
//! whatever the command is. Only the binary links this crate: a library that
//! declared a global allocator would impose it on every program using it.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
