//! The integration tests of `todo`, as one test binary: each file under `suite/` is a module of
//! it, so the tests link once instead of once per file.

mod suite;
