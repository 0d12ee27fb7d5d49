// Assistant Markdown -> sanitized HTML. markdown-it never passes raw HTML through (`html: false`),
// and DOMPurify then removes anything executable or styled. Links open nothing inside the webview:
// their target is kept only as a tooltip and a data attribute the person can copy.
import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });

const FORBID_TAGS = ["style", "img", "svg", "math", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "video", "audio", "source", "picture"];
const FORBID_ATTR = ["style", "id", "class", "srcset", "src", "action", "formaction", "target"];

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
