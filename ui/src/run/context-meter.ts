// The context meter, pure: the latest `usage` run event as the run header shows it ("41k / 200k"
// and a bar), with a warning past the compaction threshold and an honest "unknown window" when
// nothing knows the model's window (compaction then only assumes one).
import type { ContextUsage } from "./state";

export type MeterLevel = "ok" | "warn" | "unknown";

export interface MeterView {
  /** Short text beside the bar: "41k / 200k", "41k / unknown window". */
  text: string;
  /** The accessible value text (screen readers) and tooltip, in full numbers. */
  label: string;
  /** Share of the window taken, clamped to 0..1; null when the window is not known. */
  fraction: number | null;
  /** `warn` once the conversation passes the compaction threshold. */
  level: MeterLevel;
}

/** 999, 1.2k, 41k, 1.05M: tokens in a few characters. */
export function compactTokens(n: number): string {
  const v = Math.max(0, Math.round(n));
  if (v < 1000) return String(v);
  if (v < 10_000) return `${trim((v / 1000).toFixed(1))}k`;
  if (v < 1_000_000) return `${Math.round(v / 1000)}k`;
  return `${trim((v / 1_000_000).toFixed(2))}M`;
}

function trim(fixed: string): string {
  return fixed.replace(/\.?0+$/, "");
}

function full(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function meterView(ctx: ContextUsage): MeterView {
  const used = ctx.context_tokens;
  const threshold = ctx.compaction_threshold;
  const percent = (share: number) => `${Math.round(share * 100)}%`;
  if (!ctx.window_known || ctx.window_tokens <= 0) {
    return {
      text: `${compactTokens(used)} / unknown window`,
      label: `Context: ${full(used)} tokens used; the model's context window is not known (compaction assumes ${full(ctx.window_tokens)} tokens and summarizes past ${percent(threshold)} of that)`,
      fraction: null,
      level: "unknown",
    };
  }
  const share = used / ctx.window_tokens;
  const over = share > threshold;
  return {
    text: `${compactTokens(used)} / ${compactTokens(ctx.window_tokens)}`,
    label: `Context: ${full(used)} of ${full(ctx.window_tokens)} tokens (${percent(share)})${over ? `, past the compaction threshold of ${percent(threshold)}: older turns will be summarized` : `; older turns are summarized past ${percent(threshold)}`}`,
    fraction: Math.min(1, Math.max(0, share)),
    level: over ? "warn" : "ok",
  };
}
