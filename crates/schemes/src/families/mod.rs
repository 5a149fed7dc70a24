//! The built-in scheme families ([`crate::Registry::builtin`]): one line each below,
//! `module => [STATICS]`. A family is a module with a static implementing [`crate::Family`];
//! its line adds its schemes to every driver (the simulator, `salsify send/recv`, the
//! evaluation and its figures). A family from a crate of its own is added to a registry
//! with [`crate::Registry::with`] instead, and edits nothing here (docs/custom-scheme.md).
//!
//! `cargo fmt` does not reach modules declared inside a macro: format a family's file with
//! `rustfmt --edition 2021 FILE`.

macro_rules! families {
    ($($module:ident $(= $path:literal)? => [$($family:ident),+]),* $(,)?) => {
        $( $(#[path = $path])? pub mod $module; )*
        /// Every family, in the order lists and legends show them.
        pub(crate) static FAMILIES: &[&dyn crate::Family] = &[$($(&$module::$family),+),*];
    };
}

families! {
    salsify => [FAMILY],
    baselines => [WEBRTC, VIDAPTIVE, ORACLE],
    sprout => [FAMILY],
    chromium => [FAMILY],
}
