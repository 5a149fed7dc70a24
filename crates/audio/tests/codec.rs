//! Opus through libopus: a round trip keeps the signal, FEC recovers single losses better
//! than concealment, and DTX leaves silence unsent.

use salsify_audio::{
    AudioSource, Decoded, FrameLength, OpusConfig, OpusDecoder, OpusEncoder, SyntheticSpeech,
    DTX_PACKET_MAX,
};

fn speech(seconds: usize) -> Vec<i16> {
    let mut out = vec![0i16; seconds * 48_000];
    SyntheticSpeech::new(3).fill(0, &mut out);
    out
}

fn encode_all(config: &OpusConfig, pcm: &[i16]) -> Vec<Vec<u8>> {
    let mut enc = OpusEncoder::new(config).unwrap();
    pcm.chunks_exact(config.frame.samples())
        .map(|f| enc.encode(f).unwrap())
        .collect()
}

/// Signal-to-error ratio in dB of `decoded` against `original`, at the codec delay that
/// fits best (libopus delays its output by its look-ahead).
fn snr_db(original: &[i16], decoded: &[i16]) -> f64 {
    (0..800)
        .map(|lag| {
            let (mut sig, mut err) = (0.0f64, 0.0f64);
            for (i, &o) in original
                .iter()
                .enumerate()
                .take(decoded.len().saturating_sub(lag))
            {
                let d = f64::from(decoded[i + lag]);
                sig += f64::from(o).powi(2);
                err += (f64::from(o) - d).powi(2);
            }
            10.0 * (sig / err.max(1.0)).log10()
        })
        .fold(f64::MIN, f64::max)
}

#[test]
fn a_round_trip_keeps_the_voice_at_both_frame_lengths() {
    let pcm = speech(2);
    for frame in [FrameLength::Ms20, FrameLength::Ms10] {
        let config = OpusConfig {
            frame,
            ..OpusConfig::default()
        };
        let packets = encode_all(&config, &pcm);
        assert_eq!(packets.len(), pcm.len() / frame.samples());
        let mut dec = OpusDecoder::new(frame).unwrap();
        let mut out = Vec::new();
        for p in &packets {
            let (samples, how) = dec.frame(Some(p), None);
            assert_eq!(how, Decoded::Packet);
            assert_eq!(samples.len(), frame.samples());
            out.extend(samples);
        }
        let snr = snr_db(&pcm, &out);
        assert!(snr > 8.0, "{frame:?}: SNR {snr:.1} dB");
        let bytes: usize = packets.iter().map(Vec::len).sum();
        let kbps = bytes as f64 * 8.0 / 2.0 / 1000.0;
        assert!(kbps < 45.0, "{frame:?}: {kbps:.1} kb/s");
    }
}

#[test]
fn fec_recovers_a_lost_frame_better_than_concealment() {
    let config = OpusConfig::default();
    let pcm = speech(3);
    let packets = encode_all(&config, &pcm);
    let lost = |i: usize| i % 7 == 3;
    let decode = |use_fec: bool| {
        let mut dec = OpusDecoder::new(config.frame).unwrap();
        let mut out = Vec::new();
        let mut kinds = Vec::new();
        for (i, p) in packets.iter().enumerate() {
            let own = (!lost(i)).then_some(p.as_slice());
            let next = packets.get(i + 1).filter(|_| use_fec).map(Vec::as_slice);
            let (samples, how) = dec.frame(own, next);
            assert_eq!(samples.len(), config.frame.samples());
            out.extend(samples);
            kinds.push(how);
        }
        (out, kinds)
    };
    let (with_fec, kinds) = decode(true);
    let (concealed, plc_kinds) = decode(false);
    let recovered = kinds.iter().filter(|k| **k == Decoded::Fec).count();
    let lost_count = (0..packets.len()).filter(|&i| lost(i)).count();
    assert!(
        recovered * 10 >= lost_count * 8,
        "{recovered} of {lost_count} recovered by FEC"
    );
    assert_eq!(
        plc_kinds
            .iter()
            .filter(|k| **k == Decoded::Concealed)
            .count(),
        lost_count
    );
    let (fec_snr, plc_snr) = (snr_db(&pcm, &with_fec), snr_db(&pcm, &concealed));
    assert!(
        fec_snr > plc_snr + 1.0,
        "FEC {fec_snr:.1} dB, concealment {plc_snr:.1} dB"
    );
}

#[test]
fn concealment_fills_any_gap_and_garbage_is_concealed_not_a_panic() {
    let mut dec = OpusDecoder::new(FrameLength::Ms20).unwrap();
    for _ in 0..5 {
        let (samples, how) = dec.frame(None, None);
        assert_eq!((samples.len(), how), (960, Decoded::Concealed));
    }
    let (samples, how) = dec.frame(Some(&[0xff; 40]), Some(&[0xfe; 3]));
    assert_eq!(samples.len(), 960);
    assert_ne!(how, Decoded::Packet);
}

#[test]
fn dtx_leaves_silence_mostly_unsent() {
    let config = OpusConfig::default();
    let packets = encode_all(&config, &vec![0i16; 48_000 * 2]);
    let sent = packets.iter().filter(|p| p.len() > DTX_PACKET_MAX).count();
    assert!(
        sent * 4 < packets.len(),
        "{sent} of {} silent frames sent",
        packets.len()
    );
    let no_dtx = OpusConfig {
        dtx: false,
        ..config
    };
    let packets = encode_all(&no_dtx, &vec![0i16; 48_000]);
    assert!(packets.iter().all(|p| p.len() > DTX_PACKET_MAX));
}
