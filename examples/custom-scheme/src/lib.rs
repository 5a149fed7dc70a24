//! An example of a scheme family from outside the project's tree: `delay-aimd`, a delay-based
//! AIMD rate controller over the baselines' sender ([`delay_aimd`]), and a link model of its
//! own, `stairs` ([`stairs`]). The crate adds both to the built-in registry ([`registry`]) and its binary hands that registry to the command
//! (`salsify::main_with`), so `custom-scheme sim|eval|report|send|recv|demo|call` run it
//! beside every built-in scheme (docs/custom-scheme.md).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod delay_aimd;
pub mod stairs;

use salsify_schemes::{Registry, RegistryError};

/// The built-in families and `delay-aimd` (refused if a built-in family claims its wire id,
/// its name or its table), and the `stairs` link model.
pub fn registry() -> Result<Registry, RegistryError> {
    Registry::builtin()
        .with(&delay_aimd::FAMILY)?
        .with_link(&stairs::STAIRS)
}
