//! An experiment written out is the text the evaluation hashes into its run ids: the scheme
//! parameter tables, whoever owns them, must come out exactly as they always have (every
//! field of a table given, in the order of its type), or every stored run would be redone.

use salsify_sim::experiment::Experiment;

const GIVEN: &str = r#"
scheme = "sprout"
duration_s = 5
[salsify]
delay_target_ms = 50.0
[salsify_receiver]
forecast = { confidence = 0.5 }
[conventional]
encoder_max_kbps = 9000
[vidaptive]
[oracle]
quality_slack_frames = 2.0
[sprout.forecast]
confidence = 0.25
"#;

#[test]
fn an_experiment_with_every_table_writes_the_text_it_always_did() {
    let e = Experiment::from_toml(GIVEN).unwrap();
    let text = toml::to_string(&e).unwrap();
    let expected = include_str!("data/experiment_with_tables.toml");
    if text != expected {
        let _ = std::fs::write(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/data/experiment_with_tables.got"
            ),
            &text,
        );
    }
    assert_eq!(text, expected);
}

#[test]
fn an_unknown_table_or_field_is_an_error() {
    assert!(Experiment::from_toml("[no_such_scheme]\nx = 1\n").is_err());
    assert!(Experiment::from_toml("durationn_s = 1\n").is_err());
    assert!(Experiment::from_toml("[salsify]\nno_such_field = 1\n").is_err());
}
