import { describe, expect, it } from "vitest";
import { diffLines } from "../src/lib/diff";

// The Markdown sanitizer (markdown-it + DOMPurify) is tested in real Chromium
// (ui/browser-test/run.test.mjs): happy-dom's DOM is not faithful enough for DOMPurify (it keeps
// event-handler attributes there), so a test here would prove nothing.

describe("diff lines", () => {
  it("numbers old and new lines of a unified diff", () => {
    const lines = diffLines("--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n");
    expect(lines.map((l) => [l.kind, l.text, l.oldNo, l.newNo])).toEqual([
      ["file", "x.txt", null, null],
      ["hunk", "@@ -1,2 +1,2 @@", null, null],
      ["ctx", "keep", 1, 1],
      ["del", "old", 2, null],
      ["add", "new", null, 2],
    ]);
  });

  it("shows a fragment that is not a patch line by line", () => {
    expect(diffLines("-a\n+b").map((l) => [l.kind, l.text])).toEqual([
      ["del", "a"],
      ["add", "b"],
    ]);
  });
});
