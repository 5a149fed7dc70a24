//! Whether this build has sound devices, and what to say when it has none.

/// Whether this build has the devices (the `sound` feature).
pub const SUPPORTED: bool = cfg!(feature = "sound");

/// What to say when a device is asked for and the build has none.
pub const NOT_BUILT: &str = "this salsify was built without sound support (the `sound` \
     feature); build it with: scripts/setup --sound && cargo build --release -p salsify \
     --features sound";
