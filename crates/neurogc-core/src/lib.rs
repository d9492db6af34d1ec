//! NeuroGC core.
