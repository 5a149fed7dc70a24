//! Bad usage, told apart from failures at run time: a flag's value that can never work (an
//! unknown scheme or link name, a zero duration, a HOST:PORT without a port) is a
//! [`UsageError`], which `main` turns into exit status 2; every other error exits 1.
//! Unknown names come with the closest known one ("did you mean").

use std::fmt;

use anyhow::Result;
use salsify_runtime::udp;
use std::net::SocketAddr;

/// A flag's value that can never work: exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An [`anyhow::Error`] that is bad usage.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// A command stopped by Ctrl-C before it had anything to show: exit status 130, as a shell
/// reports a program SIGINT ended.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

/// The exit status of a failed command: 2 when any error of the chain is bad usage, 130 when
/// Ctrl-C stopped it, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err.chain().any(|e| e.is::<UsageError>()) {
        2
    } else if err.chain().any(|e| e.is::<Interrupted>()) {
        130
    } else {
        1
    }
}

/// The number of single-character edits (insertions, deletions, substitutions, swaps of
/// two neighbours) from `a` to `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: the distance from a[..i] to b[..j].
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitute = d[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut best = substitute.min(d[i - 1][j] + 1).min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The known name closest to `name`, if it is close enough to be a slip (at most a third
/// of its characters edited, and at least one).
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// "unknown WHAT 'NAME' (did you mean 'X'?)", or with the known names listed when none is
/// close.
pub fn unknown_name(what: &str, name: &str, known: &[&str]) -> anyhow::Error {
    match closest(name, known.iter().copied()) {
        Some(near) => usage(format!("unknown {what} '{name}' (did you mean '{near}'?)")),
        None => usage(format!(
            "unknown {what} '{name}'; one of {}",
            known.join(", ")
        )),
    }
}

/// A file's error message with a suggestion added where serde refused a name it lists the
/// choices for ("unknown variant `frontir`, expected one of `quality-delay`, ..., `frontier`"
/// or "unknown field `duraton_s`, expected one of ..."): "(did you mean 'frontier'?)".
pub fn with_suggestion(message: &str) -> String {
    with_suggestion_among(message, &[])
}

/// [`with_suggestion`], and for an unknown field whose message lists no choices, the closest
/// of `known`.
pub fn with_suggestion_among(message: &str, known_fields: &[String]) -> String {
    let message = message.trim_end();
    let quoted = |text: &str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect()
    };
    for marker in ["unknown variant `", "unknown field `"] {
        let Some(at) = message.find(marker) else {
            continue;
        };
        let rest = &message[at + marker.len()..];
        let Some(end) = rest.find('`') else { continue };
        let given = &rest[..end];
        let known = match rest.find("expected one of ") {
            Some(list_at) => {
                let line_end = rest[list_at..]
                    .find('\n')
                    .map_or(rest.len(), |i| list_at + i);
                quoted(&rest[list_at..line_end])
            }
            None => known_fields.to_vec(),
        };
        if let Some(near) = closest(given, known.iter().map(String::as_str)) {
            return format!("{message} (did you mean '{near}'?)");
        }
    }
    message.to_string()
}

/// Refuses a scheme name no family registers (`flag` names the flag in the message).
pub fn check_scheme(flag: &str, name: &str) -> Result<()> {
    let known = salsify_schemes::registry::scheme_names();
    if salsify_schemes::registry::scheme(name).is_some() {
        return Ok(());
    }
    Err(unknown_name("scheme", name, &known).context(flag.to_string()))
}

/// Refuses a scheme name that is unknown or cannot run live (the oracle reads the link's
/// future; a browser peer runs only under `salsify peer`).
pub fn check_live_scheme(flag: &str, name: &str) -> Result<()> {
    check_scheme(flag, name)?;
    match salsify_schemes::registry::scheme(name).map(|s| s.runs) {
        Some(salsify_schemes::Runs::SimulatorOnly) => Err(usage(format!(
            "{flag} {name}: {name} reads the link's future and runs only in the simulator \
             (salsify sim / eval)"
        ))),
        Some(salsify_schemes::Runs::Peer(_)) => Err(usage(format!(
            "{flag} {name}: {name} is a browser peer (salsify peer, or a live group of salsify eval)"
        ))),
        _ => Ok(()),
    }
}

/// Refuses a link preset that is not one of the list (`constant:...` is left to the link's
/// own checks, which say what is wrong with the rate).
pub fn check_link(flag: &str, preset: &str) -> Result<()> {
    let added = salsify_schemes::registry::link_model(preset).is_some();
    let presets = salsify_eval::experiment::presets();
    if added || presets.contains(&preset) || preset.starts_with("constant:") {
        return Ok(());
    }
    Err(unknown_name("preset", preset, &presets).context(flag.to_string()))
}

/// Refuses a HOST:PORT with no port or a port that is not a number, and when `destination`
/// port 0 or the unspecified address (so these are bad usage, not a failure to resolve).
fn check_host_port(flag: &str, spec: &str, destination: bool) -> Result<()> {
    let Some((host, port)) = spec.rsplit_once(':') else {
        return Err(usage(format!(
            "{flag} '{spec}' has no port: give HOST:PORT"
        )));
    };
    // An IPv6 address without brackets ("::1") has colons but no port.
    if host.contains(':') && !host.starts_with('[') {
        return Err(usage(format!(
            "{flag} '{spec}' has no port: give HOST:PORT ([{spec}]:PORT for an IPv6 address)"
        )));
    }
    match port.parse::<u16>() {
        Err(_) => Err(usage(format!(
            "{flag} '{spec}': '{port}' is not a port (0 to 65535)"
        ))),
        Ok(0) if destination => Err(usage(format!(
            "{flag} '{spec}': port 0 is no destination (give the port the peer listens on)"
        ))),
        Ok(_) => {
            let ip = host.trim_start_matches('[').trim_end_matches(']');
            match ip.parse::<std::net::IpAddr>() {
                Ok(ip) if destination && ip.is_unspecified() => Err(usage(format!(
                    "{flag} '{spec}': {ip} is no destination (give the peer's address)"
                ))),
                _ => Ok(()),
            }
        }
    }
}

/// `spec` (HOST:PORT) to listen at; a malformed one is bad usage.
pub fn resolve(flag: &str, spec: &str) -> Result<SocketAddr> {
    check_host_port(flag, spec, false)?;
    udp::resolve(spec)
}

/// `spec` (HOST:PORT) to send to; a malformed one is bad usage.
pub fn resolve_destination(flag: &str, spec: &str) -> Result<SocketAddr> {
    check_host_port(flag, spec, true)?;
    udp::resolve_destination(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_name_is_suggested() {
        assert_eq!(edit_distance("salsfy-2c", "salsify-2c"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("wiif", "wifi"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let known = ["salsify-2c", "salsify-1c", "conventional"];
        assert_eq!(closest("salsfy-2c", known), Some("salsify-2c"));
        assert_eq!(closest("conventinal", known), Some("conventional"));
        assert_eq!(closest("zzz", known), None);
    }

    #[test]
    fn serdes_lists_of_names_get_a_suggestion() {
        let figure = "TOML parse error at line 5, column 10\n  |\n5 | figures=[\"frontir\"]\n\
                      unknown variant `frontir`, expected one of `quality-delay`, `frontier`\n";
        assert!(with_suggestion(figure).ends_with("(did you mean 'frontier'?)"));
        let field = "unknown field `duraton_s`, expected one of `scheme`, `duration_s`";
        assert!(with_suggestion(field).ends_with("(did you mean 'duration_s'?)"));
        // Nothing close, or nothing listed: the message as it was.
        let far = "unknown variant `zzz`, expected one of `quality-delay`, `frontier`";
        assert_eq!(with_suggestion(far), far);
        assert_eq!(with_suggestion("no such thing"), "no such thing");
    }

    #[test]
    fn usage_errors_exit_2_through_context() {
        let err = usage("bad").context("--scheme");
        assert_eq!(exit_code(&err), 2);
        assert_eq!(exit_code(&anyhow::anyhow!("io")), 1);
        for spec in [
            "127.0.0.1",
            "::1",
            "h:x",
            "h:0",
            "h:70000",
            "0.0.0.0:9",
            "[::]:9",
        ] {
            assert_eq!(
                exit_code(&check_host_port("--to", spec, true).unwrap_err()),
                2
            );
        }
        assert!(check_host_port("--to", "[::1]:5000", true).is_ok());
        assert!(check_host_port("--listen", "0.0.0.0:0", false).is_ok());
    }
}
