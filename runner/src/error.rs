//! The library's error: a message that names the file, line and column, or the
//! field, ready to show. Every library error is bad input (the binary exits 2).

/// An error with a message that says what went wrong and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, naming the file or argument.
    pub message: String,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
