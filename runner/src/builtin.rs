//! Scenarios compiled into the binary.

/// (name, RON text) of every built-in scenario; the first is the default.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("support_desk", include_str!("../../seeds/support_desk.ron")),
    ("flight_booking", include_str!("../../seeds/flight_booking.ron")),
    ("newsroom", include_str!("../../seeds/newsroom.ron")),
    ("weather_dining", include_str!("../../seeds/weather_dining.ron")),
];

/// The default scenario's name.
pub const DEFAULT_SCENARIO: &str = SCENARIOS[0].0;

/// The text of the built-in scenario `name`.
pub fn scenario(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}
