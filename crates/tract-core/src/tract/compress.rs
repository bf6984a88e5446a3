//! Making a view smaller through a handle: clearing old tool results and compressing runs of
//! messages (each with its dry run).

use crate::error::Result;
use crate::id::CommitId;
use crate::summarize::compress::{self, CompressOutcome, CompressPlan, CompressRequest, ToolTurns};
use crate::tools::clear::{self, ClearOptions, ClearOutcome, ClearPlan};
use crate::view::revision::Rev;

use super::Tract;

impl Tract {
    /// What [`Tract::clear_tool_results`] would clear and the tokens before and after,
    /// without committing anything.
    pub fn plan_clear_tool_results(&self, opts: &ClearOptions) -> Result<ClearPlan> {
        clear::plan_clear(&self.repo, opts)
    }

    /// Replaces the results of all but the last `keep` tool turns with a placeholder naming
    /// the original commit, as edits in one transaction. The originals stay in history.
    pub fn clear_tool_results(&self, opts: &ClearOptions) -> Result<ClearOutcome> {
        clear::clear(&self.repo, opts)
    }

    /// The runs [`Tract::compress`] would replace, without summarizing or committing.
    pub fn plan_compress(&self, req: &CompressRequest<'_>) -> Result<CompressPlan> {
        compress::plan_compress(&self.repo, req)
    }

    /// Replaces the selected positions with one summary per contiguous run (preserved
    /// positions split runs and stay). Everything outside the selection stays as it was; the
    /// sources stay in history, linked from each compress commit. All or nothing: a summarizer
    /// failure, or another writer changing a selected message meanwhile (an edit, a
    /// compression), commits nothing; messages appended meanwhile are kept after the summaries.
    pub fn compress(&self, req: &CompressRequest<'_>) -> Result<CompressOutcome> {
        compress::compress(&self.repo, req, self.summarizer())
    }

    /// Compresses whole tool turns with [`crate::TOOL_SUMMARIZE_SYSTEM`] by default. A
    /// selection that holds part of a turn takes the whole turn; with `turns.commits` `None`,
    /// every turn (of tool `turns.name` if given). With `turns.preserve_answer`, the last
    /// assistant message without tool calls in the selection (the final answer) is kept.
    pub fn compress_tool_calls(
        &self,
        turns: &ToolTurns,
        req: CompressRequest<'_>,
    ) -> Result<CompressOutcome> {
        let req = self.tool_turn_request(turns, req)?;
        self.compress(&req)
    }

    /// The request [`Tract::compress_tool_calls`] makes of [`Tract::compress`]: the selection
    /// widened to whole turns, the final answer preserved, the tool prompt by default. Feed it
    /// to [`Tract::plan_compress`] for a dry run.
    pub fn tool_turn_request<'a>(
        &self,
        turns: &ToolTurns,
        req: CompressRequest<'a>,
    ) -> Result<CompressRequest<'a>> {
        compress::tool_turn_request(&self.repo, turns, req)
    }

    /// The view positions from `from` to `to`, both included, in view order.
    pub fn positions_between(&self, from: &Rev, to: &Rev) -> Result<Vec<CommitId>> {
        compress::positions_between(&self.repo, from, to)
    }
}
