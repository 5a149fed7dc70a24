//! The `salsify` binary: the command over the built-in scheme families.

fn main() {
    salsify::main_with(salsify::Registry::builtin());
}
