//! `custom-scheme`: the `salsify` command with the `delay-aimd` family added.

fn main() {
    match custom_scheme::registry() {
        Ok(registry) => salsify::main_with(registry),
        Err(why) => {
            eprintln!("custom-scheme: error: {why}");
            std::process::exit(1);
        }
    }
}
