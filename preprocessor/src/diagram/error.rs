//! Why a diagram directive's words do not make a diagram, each reported at the directive's line.

/// A problem with a diagram directive's attributes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectiveError {
    // The words (`directive.rs`).
    #[error("`{0}` is given twice")]
    Twice(String),
    #[error(
        "expected `name=value`, found `{0}` (a value with spaces goes in double quotes: index=\"t * 2\")"
    )]
    NotAPair(String),
    #[error("`{0}` is not an attribute name (letters, digits and `_`, not starting with a digit)")]
    NotAName(String),
    #[error("the value of `{0}` opens a `\"` that is not closed")]
    UnclosedQuote(String),
    #[error("the list of `{0}` opens a `[` that is not closed")]
    UnclosedList(String),
    #[error("the list of `{0}` has an empty item: write it as [1, 2, 4]")]
    EmptyItem(String),
    #[error("`{0}=` has no value")]
    NoValue(String),
    #[error("the value of `{name}`, `{word}`, must be a word, a \"quoted string\" or a [list]")]
    NotAWord { name: String, word: String },
    // What they mean (`spec.rs`).
    #[error("`{0}` takes one value, not a list")]
    NotAList(String),
    #[error("`{0}` must be positive")]
    NotPositive(&'static str),
    #[error("`op` is `load` or `store`, not `{0}`")]
    NotAnOp(String),
    #[error("give `index` (an element index) or `addr` (a byte address), not both")]
    IndexAndAddr,
    #[error(
        "`{{{{#{0}}}}}` needs the access pattern: index=\"EXPR\" (lane t's element index) or addr=\"EXPR\" (its byte address)"
    )]
    NoPattern(&'static str),
    #[error("`{name}` must be an integer, not `{text}`")]
    NotAnInteger { name: String, text: String },
    #[error("`{0}` is the lane (0 to 31) and cannot be given a value")]
    LaneGiven(&'static str),
    #[error(
        "a stride must be at least 1 (with a stride of 0 every lane reads the same element: write that pattern without `t`, e.g. index=\"0\", to show a broadcast)"
    )]
    StrideBelowOne,
    #[error(
        "only one value may be a list (one diagram per value); `{first}` and `{second}` both are"
    )]
    TwoLists { first: String, second: String },
    #[error("`{name}={text}`: `{name}` is not one of {keys} and a named value must be an integer")]
    Unknown {
        name: String,
        text: String,
        keys: String,
    },
    #[error("`variant` lists {listed} variants; it needs one per value of the list ({values})")]
    VariantCount { listed: usize, values: usize },
    #[error("`lab={0}` needs `variant=NAME`: the row whose counters sit beside the diagram")]
    LabWithoutVariant(String),
    #[error("`variant` needs `lab=NAME`, the lab it is a row of")]
    VariantWithoutLab,
}
