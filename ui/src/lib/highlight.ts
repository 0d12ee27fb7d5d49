// Code highlighting for fenced blocks in assistant Markdown (highlight.js, a fixed set of common
// languages; no auto-detection: a block without a known language stays plain). highlight.js escapes
// the code itself; its output still goes through the sanitizer with the rest of the message, which
// keeps only `hljs-*` and `language-*` class names (lib/markdown.ts).
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const LANGUAGES = { bash, c, cpp, css, diff, dockerfile, go, ini, java, javascript, json, makefile, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);

/** Blocks larger than this are shown plain: a streamed message is re-rendered on every delta. */
export const MAX_HIGHLIGHT_CHARS = 64 * 1024;

/**
 * Highlighted HTML of `code` in the fence's language (its first word, e.g. "rust" of "rust,ignore"),
 * or "" when the language is unknown or the block too large (markdown-it then escapes it itself).
 */
export function highlightCode(code: string, info: string): string {
  const lang = info.trim().split(/[\s,{]/, 1)[0]?.toLowerCase() ?? "";
  if (!lang || code.length > MAX_HIGHLIGHT_CHARS || !hljs.getLanguage(lang)) return "";
  try {
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  } catch {
    return "";
  }
}

/** Whether a class name may stay on sanitized Markdown: highlight.js scopes and fence languages. */
export function allowedClass(name: string): boolean {
  return /^hljs(-[a-z0-9_]+)*_*$/.test(name) || /^language-[a-z0-9+#_-]{1,32}$/.test(name);
}
