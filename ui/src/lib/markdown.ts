// Assistant Markdown -> sanitized HTML. markdown-it never passes raw HTML through (`html: false`),
// and DOMPurify then removes anything executable or styled. Links open nothing inside the webview:
// their target is kept only as a tooltip and a data attribute the person can copy.
import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";
import { allowedClass, highlightCode } from "./highlight";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false, highlight: highlightCode });

const FORBID_TAGS = ["style", "img", "svg", "math", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "video", "audio", "source", "picture"];
// `class` is filtered by the hook below (highlight.js scopes and fence languages only).
const FORBID_ATTR = ["style", "id", "srcset", "src", "action", "formaction", "target"];

let hooked = false;
function installHooks(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      const href = node.getAttribute("href");
      node.removeAttribute("href");
      if (href) {
        node.setAttribute("title", href);
        node.setAttribute("data-href", href);
      }
      node.setAttribute("class", "md-link");
      return;
    }
    const cls = node.getAttribute("class");
    if (cls === null) return;
    const kept = cls.split(/\s+/).filter(allowedClass);
    if (kept.length > 0 && (node.tagName === "SPAN" || node.tagName === "CODE")) {
      node.setAttribute("class", kept.join(" "));
    } else {
      node.removeAttribute("class");
    }
  });
}

/** Sanitized HTML for `{@html}`; the only path by which model text becomes markup. */
export function renderMarkdown(source: string): string {
  if (!DOMPurify.isSupported) return escapeHtml(source);
  installHooks();
  const html = md.render(source);
  return DOMPurify.sanitize(html, {
    FORBID_TAGS,
    FORBID_ATTR,
    ALLOW_DATA_ATTR: false,
    ADD_ATTR: ["data-href"],
    USE_PROFILES: { html: true },
  }) as unknown as string;
}

/** Fail closed where the sanitizer cannot run: the text, escaped, no markup at all. */
function escapeHtml(text: string): string {
  return `<p>${text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")}</p>`;
}
