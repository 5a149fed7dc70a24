//! Any baseline sender by scheme: [`BaselineSender`] builds the one a scheme name calls for
//! and forwards the endpoint calls to it. Each sender implements [`SenderEndpoint`] itself;
//! this only picks one.

use salsify_endpoint::{
    DatagramError, Diagnostic, EncodeFailed, EncodeOutcome, InputError, SenderEndpoint,
    SenderOutput, SenderStats,
};
use salsify_time::Instant;

use crate::error::ConfigError;
use crate::scheme::Scheme;
use crate::{
    ConventionalConfig, LinkForecast, OracleConfig, OracleSender, VidaptiveConfig, VidaptiveSender,
    WebrtcSender,
};

/// One of the baseline senders.
#[derive(Debug)]
pub enum BaselineSender {
    /// libwebrtc's GoogCC and video sender.
    Conventional(WebrtcSender),
    /// Vidaptive-style Copa.
    Vidaptive(VidaptiveSender),
    /// The oracle (simulator only).
    Oracle(OracleSender),
}

impl BaselineSender {
    /// The conventional sender for a `source` = (width, height) camera
    /// ([`WebrtcSender::new`]).
    pub fn conventional(
        config: ConventionalConfig,
        source: (u32, u32),
    ) -> Result<Self, ConfigError> {
        WebrtcSender::new(config, source).map(BaselineSender::Conventional)
    }

    /// The Vidaptive-style sender for a `source` = (width, height) camera
    /// ([`VidaptiveSender::new`]).
    pub fn vidaptive(config: VidaptiveConfig, source: (u32, u32)) -> Result<Self, ConfigError> {
        VidaptiveSender::new(config, source).map(BaselineSender::Vidaptive)
    }

    /// The oracle, reading the link's future from `forecast` ([`OracleSender::new`]).
    pub fn oracle(config: OracleConfig, forecast: LinkForecast) -> Result<Self, ConfigError> {
        OracleSender::new(config, forecast).map(BaselineSender::Oracle)
    }

    /// Which scheme it runs.
    pub fn kind(&self) -> Scheme {
        match self {
            BaselineSender::Conventional(_) => Scheme::Conventional,
            BaselineSender::Vidaptive(_) => Scheme::Vidaptive,
            BaselineSender::Oracle(_) => Scheme::Oracle,
        }
    }

    fn endpoint(&self) -> &dyn SenderEndpoint {
        match self {
            BaselineSender::Conventional(s) => s,
            BaselineSender::Vidaptive(s) => s,
            BaselineSender::Oracle(s) => s,
        }
    }

    fn endpoint_mut(&mut self) -> &mut dyn SenderEndpoint {
        match self {
            BaselineSender::Conventional(s) => s,
            BaselineSender::Vidaptive(s) => s,
            BaselineSender::Oracle(s) => s,
        }
    }
}

impl SenderEndpoint for BaselineSender {
    fn scheme(&self) -> &'static str {
        self.endpoint().scheme()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.endpoint_mut().handle_picture(now, picture, captured)
    }

    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        self.endpoint_mut().handle_encoded(now, id, result)
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        self.endpoint_mut().handle_datagram(now, datagram)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.endpoint_mut().handle_timeout(now)
    }

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        self.endpoint_mut().poll_output(now)
    }

    fn stats(&self) -> SenderStats {
        self.endpoint().stats()
    }

    fn diagnostics(&self) -> Vec<Diagnostic> {
        self.endpoint().diagnostics()
    }
}
