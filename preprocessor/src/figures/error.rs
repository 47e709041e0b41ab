//! What can be wrong with a figure in the prose: a directive that does not parse
//! ([`ParseError`], reported at its file and line), and a figure the results cannot give
//! ([`Gap`], a marked gap whose tooltip says why).

/// Why a figure directive does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("`{0}` is not a directive")]
    NotADirective(String),
    /// The directive's words do not fit its form; the text shows the form.
    #[error("{0}")]
    Usage(&'static str),
    #[error("unknown field `{word}` (fields: {names})")]
    UnknownField { word: String, names: String },
    #[error("unknown device property `{word}` (properties: name, {names})")]
    UnknownProperty { word: String, names: String },
    #[error("`{0}` is not a lab or variant name (letters, digits, `_` or `-`)")]
    NotAName(String),
    #[error("`{0}` needs LAB.VARIANT")]
    NotARow(String),
    #[error(
        "`{{{{#value {0}}}}}` needs LAB.VARIANT.FIELD, e.g. `{{{{#value transpose.padded.gbs}}}}`"
    )]
    NotAValuePath(String),
    /// Two rows of different labs where one lab's are needed ("a ratio compares").
    #[error("a {what} two rows of one lab (`{lab}` and `{other}`)")]
    TwoLabs {
        what: &'static str,
        lab: String,
        other: String,
    },
}

/// Why a figure has no number here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Gap {
    #[error("lab `{0}` has no results")]
    NoResults(String),
    #[error("`{0}` was not measured")]
    NotMeasured(String),
    #[error("`{variant}` has no measurement ({why})")]
    NoMeasurement { variant: String, why: &'static str },
    /// The row was measured, but has no such figure ("bandwidth", "counter").
    #[error("`{variant}` has no {what}")]
    Missing { variant: String, what: &'static str },
    #[error("lab `{0}` was not profiled here")]
    NotProfiled(String),
    #[error("`{variant}` has no counters{}", .problem.as_ref().map(|p| format!(": {p}")).unwrap_or_default())]
    NoCounters {
        variant: String,
        problem: Option<String>,
    },
    #[error("{0} is not a number")]
    NotANumber(String),
    #[error("the driver did not report the {0}")]
    NotReported(&'static str),
    #[error("the results do not record the {0} (recorded before the runner read it)")]
    NotRecorded(&'static str),
    /// No cited per-architecture constant for this GPU ("FP32 lane count").
    #[error("no cited {what} for {arch} ({name})")]
    NotCited {
        what: &'static str,
        arch: String,
        name: String,
    },
}
