// Small pure formatters shared by views.

/** "07:22:01" from an RFC 3339 timestamp (local time), the full timestamp when it does not parse. */
export function formatTime(startedAt: string): string {
  const date = new Date(startedAt);
  if (Number.isNaN(date.getTime())) return startedAt;
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

export function formatDuration(ms: number | null): string {
  if (ms === null) return "–";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

/** What a call's tool name is shown as when the model sent none (or only spaces). */
export const NO_TOOL_NAME = "(no name)";

/** True when a call has no tool name to show (the agent answers such a call at Discovery). */
export function toolNameMissing(name: string | null | undefined): boolean {
  return (name ?? "").trim() === "";
}

/** A call's tool name as shown: the name, or `NO_TOOL_NAME` (styled `.tool-name-missing`). */
export function toolNameText(name: string | null | undefined): string {
  return toolNameMissing(name) ? NO_TOOL_NAME : (name as string);
}
