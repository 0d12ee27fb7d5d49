// Unified diff (the core's ConfirmRequest.diff) -> lines to render as text, parsed with the `diff`
// package. Text that is not a parseable patch is shown as plain context lines.
import { parsePatch, type StructuredPatch } from "diff";

export interface DiffLine {
  kind: "add" | "del" | "ctx" | "hunk" | "file";
  text: string;
  oldNo: number | null;
  newNo: number | null;
}

export function diffLines(patch: string): DiffLine[] {
  let parsed: StructuredPatch[];
  try {
    parsed = parsePatch(patch);
  } catch {
    parsed = [];
  }
  const out: DiffLine[] = [];
  for (const file of parsed) {
    if (file.oldFileName || file.newFileName) {
      const name = file.newFileName && file.newFileName !== "/dev/null" ? file.newFileName : (file.oldFileName ?? "");
      out.push({ kind: "file", text: name.replace(/^[ab]\//, ""), oldNo: null, newNo: null });
    }
    for (const hunk of file.hunks) {
      out.push({ kind: "hunk", text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`, oldNo: null, newNo: null });
      let o = hunk.oldStart;
      let n = hunk.newStart;
      for (const line of hunk.lines) {
        const mark = line[0];
        const text = line.slice(1);
        if (mark === "+") out.push({ kind: "add", text, oldNo: null, newNo: n++ });
        else if (mark === "-") out.push({ kind: "del", text, oldNo: o++, newNo: null });
        else if (mark === "\\") continue;
        else out.push({ kind: "ctx", text, oldNo: o++, newNo: n++ });
      }
    }
  }
  if (!out.some((l) => l.kind === "add" || l.kind === "del" || l.kind === "ctx")) {
    // Not a unified diff with hunks (e.g. "-a\n+b"): show it line by line, marked by first char.
    return patch.split("\n").map((line) => ({
      kind: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx",
      text: line.startsWith("+") || line.startsWith("-") ? line.slice(1) : line,
      oldNo: null,
      newNo: null,
    }));
  }
  return out;
}
