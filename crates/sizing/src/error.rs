//! What can be wrong with a profile or a workload, named by its field (the one error every
//! module of this crate returns, kept apart so that none of them imports from the crate root).

/// What can be wrong with a profile or a workload: the field and why.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SizingError {
    /// A field's value is out of range or names something the profile lacks.
    #[error("{field}: {why}")]
    Field {
        /// The field, as written in the JSON (`workload.suite`, `profile.suites.aes128gcm`).
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// The text is not the JSON expected.
    #[error("{what}: {why}")]
    Parse {
        /// Which document.
        what: String,
        /// serde's message (with line and column).
        why: String,
    },
}

impl SizingError {
    pub(crate) fn field(field: impl Into<String>, why: impl Into<String>) -> SizingError {
        SizingError::Field { field: field.into(), why: why.into() }
    }
}
