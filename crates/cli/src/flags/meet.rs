//! How `send` and `recv` meet a peer when both may be behind NATs (`--via` and its helpers),
//! converted into the runtime's [`Via`].

use anyhow::{bail, Result};
use clap::Args;
use salsify_runtime::meet_phase::{TurnServer, Via};

/// Flags for meeting the peer through a rendezvous.
#[derive(Args, Debug, Clone, Default)]
pub struct MeetArgs {
    /// Meet the peer through the rendezvous at HOST:PORT (`salsify rendezvous`), both sides
    /// possibly behind NATs: candidates, hole punching, then the call on the pair that works.
    /// Needs --key and --peer-key (the introduction and the checks are sealed with them).
    #[arg(long)]
    pub via: Option<String>,
    /// With --via: a STUN server, HOST:PORT, for this side's address as the Internet sees it
    /// (coturn answers STUN; the rendezvous's view is used too).
    #[arg(long, requires = "via")]
    pub stun: Option<String>,
    /// With --via: a TURN server, turn:HOST:PORT, to relay the call through when no direct
    /// pair works (both sides behind symmetric NATs). The relay sees only ciphertext.
    #[arg(long, requires_all = ["via", "turn_user", "turn_password"])]
    pub turn: Option<String>,
    /// The TURN server's user name (long-term credentials).
    #[arg(long, requires = "turn")]
    pub turn_user: Option<String>,
    /// The TURN server's password.
    #[arg(long, requires = "turn")]
    pub turn_password: Option<String>,
}

impl MeetArgs {
    /// The meeting these flags describe (`None` without --via); `keyed`: whether --key was
    /// given (meeting needs keys).
    pub fn via(&self, keyed: bool) -> Result<Option<Via>> {
        let Some(rendezvous) = &self.via else {
            return Ok(None);
        };
        if !keyed {
            bail!("--via needs --key and --peer-key: the peers' introduction is sealed with them");
        }
        let stun = match &self.stun {
            Some(s) => Some(crate::usage::resolve_destination("--stun", s)?),
            None => None,
        };
        let turn = match &self.turn {
            Some(spec) => {
                let host = spec.strip_prefix("turn:").unwrap_or(spec);
                Some(TurnServer {
                    server: crate::usage::resolve_destination("--turn", host)?,
                    user: self.turn_user.clone().unwrap_or_default(),
                    password: self.turn_password.clone().unwrap_or_default(),
                })
            }
            None => None,
        };
        Ok(Some(Via {
            rendezvous: crate::usage::resolve_destination("--via", rendezvous)?,
            stun,
            turn,
        }))
    }
}
