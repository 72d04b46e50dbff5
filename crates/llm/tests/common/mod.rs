//! What the local model's and the chat server's tests share.

use ckeep_llm::{Prompt, Sink};

/// A sink that cancels after its n-th piece.
pub struct StopAfter(pub usize);

impl Sink for StopAfter {
    fn text(&mut self, _: &str) {
        self.0 = self.0.saturating_sub(1);
    }
    fn cancelled(&self) -> bool {
        self.0 == 0
    }
}

/// A prompt for a brief answer.
pub fn ask(user: &str, max_tokens: usize, one_line: bool) -> Prompt {
    Prompt { system: "You answer briefly.".into(), user: user.into(), max_tokens, one_line }
}
