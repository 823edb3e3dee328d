//! The end-to-end tests, as one test binary: each file under `suite/` is a module of it, so the
//! tests link once instead of once per file, and the chapter binaries are built once for all of
//! them (`e2e::bin`).

mod suite;
