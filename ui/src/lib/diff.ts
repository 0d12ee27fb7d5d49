// Unified diff (the core's ConfirmRequest.diff) -> lines to render as text, parsed with the `diff`
// package. Text that is not a parseable patch is shown as plain context lines.
import { parsePatch, type StructuredPatch } from "diff";

export interface DiffLine {
  kind: "add" | "del" | "ctx" | "hunk" | "file";
  text: string;
  oldNo: number | null;
  newNo: number | null;
  /**
   * Which line of the patch (split at `\n`, a final empty line left out, as the core numbers the
   * lines of `ConfirmDisplay.diff`) this is, and how many leading characters (the `+`/`-`/` `
   * mark) `text` leaves out of it; null for lines made here (file name, hunk header).
   */
  raw: { line: number; cut: number } | null;
}

/** The patch's lines as the core's `ConfirmDisplay.diff` numbers them. */
function rawLines(patch: string): string[] {
  return (patch.endsWith("\n") ? patch.slice(0, -1) : patch).split("\n");
}

export function diffLines(patch: string): DiffLine[] {
  let parsed: StructuredPatch[];
  try {
    parsed = parsePatch(patch);
  } catch {
    parsed = [];
  }
  const out: DiffLine[] = [];
  const raws = rawLines(patch);
  let cursor = 0;
  // Parsed hunk lines are the patch's own lines, in order: find each one from where the last was.
  const locate = (line: string): { line: number; cut: number } | null => {
    for (let i = cursor; i < raws.length; i++) {
      if (raws[i] === line || raws[i] === `${line}\r`) {
        cursor = i + 1;
        return { line: i, cut: 1 };
      }
    }
    return null;
  };
  for (const file of parsed) {
    if (file.oldFileName || file.newFileName) {
      const name = file.newFileName && file.newFileName !== "/dev/null" ? file.newFileName : (file.oldFileName ?? "");
      out.push({ kind: "file", text: name.replace(/^[ab]\//, ""), oldNo: null, newNo: null, raw: null });
    }
    for (const hunk of file.hunks) {
      out.push({ kind: "hunk", text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`, oldNo: null, newNo: null, raw: null });
      let o = hunk.oldStart;
      let n = hunk.newStart;
      for (const line of hunk.lines) {
        const mark = line[0];
        const text = line.slice(1);
        if (mark === "\\") continue;
        const raw = locate(line);
        if (mark === "+") out.push({ kind: "add", text, oldNo: null, newNo: n++, raw });
        else if (mark === "-") out.push({ kind: "del", text, oldNo: o++, newNo: null, raw });
        else out.push({ kind: "ctx", text, oldNo: o++, newNo: n++, raw });
      }
    }
  }
  if (!out.some((l) => l.kind === "add" || l.kind === "del" || l.kind === "ctx")) {
    // Not a unified diff with hunks (e.g. "-a\n+b"): show it line by line, marked by first char.
    return patch.split("\n").map((line, i) => {
      const cut = line.startsWith("+") || line.startsWith("-") ? 1 : 0;
      return {
        kind: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx",
        text: line.slice(cut),
        oldNo: null,
        newNo: null,
        raw: i < raws.length ? { line: i, cut } : null,
      };
    });
  }
  return out;
}
