//! The block that runs right now, as `/latest_answer` shows it among the finished ones: from its
//! `BlockStarted` (tool, code) through its `BlockOutput` chunks (the output's tail so far) until
//! its `BlockFinished` replaces it. AgenticSeek's front end draws every entry of `blocks` in its
//! Editor View, so a block shows there while it runs, not only once it ended.
//!
//! The entry has AgenticSeek's four fields (`block`, `feedback`, `success`, `tool_type`) and the
//! record's others, plus `running: true`; `success` is `true` while nothing has failed (a client
//! that reads `success: false` as a failure must not see one before the block ended), and its
//! feedback starts `[running]`. Pure state: it must not know about HTTP or the board's task.

use serde_json::{Map, Value};

use crate::wire::BlockRecord;

/// Bytes of the running block's output kept (its tail): enough for a view, bounded however much
/// a block prints.
pub(crate) const OUTPUT_TAIL_BYTES: usize = 4 * 1024;

/// The running block: what it is and its output's tail so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunningBlock {
    round: u32,
    index: usize,
    tool: String,
    code: String,
    save_path: Option<String>,
    output: String,
}

impl RunningBlock {
    pub fn started(
        round: u32,
        index: usize,
        tool: &str,
        code: &str,
        save_path: Option<&str>,
    ) -> Self {
        Self {
            round,
            index,
            tool: tool.to_owned(),
            code: code.to_owned(),
            save_path: save_path.map(str::to_owned),
            output: String::new(),
        }
    }

    /// Whether `round`/`index` name this block (output of another block is not this one's).
    pub fn is(&self, round: u32, index: usize) -> bool {
        self.round == round && self.index == index
    }

    /// Adds a chunk of output, keeping the last `OUTPUT_TAIL_BYTES` (cut at a line start when
    /// one is near, always at a character boundary).
    pub fn output(&mut self, text: &str) {
        self.output.push_str(text);
        if self.output.len() > OUTPUT_TAIL_BYTES {
            let mut start = self
                .output
                .ceil_char_boundary(self.output.len() - OUTPUT_TAIL_BYTES);
            if let Some(newline) = self.output[start..].find('\n')
                && newline < OUTPUT_TAIL_BYTES / 4
            {
                start += newline + 1;
            }
            self.output.drain(..start);
        }
    }

    /// The entry `blocks` shows: the record's shape with `running: true`.
    pub fn json(&self) -> Value {
        let feedback = if self.output.trim().is_empty() {
            "[running] no output yet".to_owned()
        } else {
            format!("[running] output so far:\n{}", self.output)
        };
        let record = BlockRecord {
            round: self.round,
            index: self.index,
            tool_type: self.tool.clone(),
            block: self.code.clone(),
            save_path: self.save_path.clone(),
            feedback,
            success: true,
            exit_code: None,
            timed_out: false,
            stopped: false,
            skipped: false,
            duration_ms: 0.0,
            output: self.output.clone(),
            not_run: None,
        };
        // A record is strings, numbers and bools: it always encodes to an object.
        let mut map = match serde_json::to_value(record) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        map.insert("running".into(), Value::Bool(true));
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_has_agenticseeks_fields_and_says_it_runs() {
        let mut block = RunningBlock::started(1, 0, "bash", "sleep 5\n", None);
        let entry = block.json();
        assert_eq!(entry["block"], "sleep 5\n");
        assert_eq!(entry["tool_type"], "bash");
        assert_eq!(entry["success"], true);
        assert_eq!(entry["running"], true);
        assert_eq!(entry["feedback"], "[running] no output yet");
        block.output("step 1\n");
        let entry = block.json();
        assert_eq!(entry["output"], "step 1\n");
        assert_eq!(entry["feedback"], "[running] output so far:\nstep 1\n");
    }

    #[test]
    fn only_the_tail_of_a_long_output_is_kept() {
        let mut block = RunningBlock::started(1, 0, "bash", "yes\n", None);
        for i in 0..10_000 {
            block.output(&format!("line {i} é\n"));
        }
        let entry = block.json();
        let output = entry["output"].as_str().expect("text");
        assert!(output.len() <= OUTPUT_TAIL_BYTES, "{}", output.len());
        assert!(output.ends_with("line 9999 é\n"));
        assert!(
            output.starts_with("line "),
            "cut at a line start: {output:.40}"
        );
    }

    #[test]
    fn a_block_knows_its_place() {
        let block = RunningBlock::started(2, 1, "python", "print(1)\n", Some("a.py"));
        assert!(block.is(2, 1));
        assert!(!block.is(2, 0));
        assert_eq!(block.json()["save_path"], "a.py");
    }
}
