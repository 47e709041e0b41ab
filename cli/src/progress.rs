//! A terminal progress display for long measurements (indicatif), hidden when stderr is not a
//! terminal.

use indicatif::{ProgressBar, ProgressStyle};
use kernelbook_core::terminal;
use kernelbook_runner::engine::Progress;
use std::time::Duration;

pub struct Spinner {
    bar: ProgressBar,
    variant: String,
}

impl Spinner {
    pub fn new() -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        Spinner {
            bar,
            variant: String::new(),
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Spinner {
    // Messages name labs and variants from lab files: control characters are escaped. A closed
    // stderr is no error: indicatif draws on a terminal only, and ignores failed writes.
    fn stage(&mut self, message: &str) {
        self.bar
            .set_message(terminal::one_line(message).into_owned());
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        self.variant = format!("[{}/{total}] {}", index + 1, terminal::one_line(name));
        self.bar.set_message(self.variant.clone());
    }
    fn samples(&mut self, count: usize) {
        if count.is_multiple_of(10) {
            self.bar
                .set_message(format!("{}: {count} samples", self.variant));
        }
    }
}
